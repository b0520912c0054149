#!/usr/bin/env python3
"""Checks that src/'s rooms include only the headers of the rooms they link.

    check_rooms.py <rooms file> <src dir> [--stamp FILE] [--graph]

The rooms file is written by src/CMakeLists.txt from the same lists that its
target_link_libraries calls use, one room a line:

    <room> <folder>[,<folder>...] : [<linked room> ...]

Every `#include "<folder>/..."` in a room's files must name one of its own folders or a folder
of a room it links directly, and every room it links must be included somewhere (the links are
exactly the arrows). An include without a folder must name a file beside the includer; public
headers ("pagoda/...") are open to all. Exits 1 naming each file and include at fault, so the
build stops. --graph prints the link graph (the arrows, one room a line); --stamp writes FILE
when the check passes, for the build's dependency tracking. tests/abi/check_rooms_test.sh
tests this script.
"""
import argparse
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def read_rooms(path):
    rooms = {}  # room -> (folders, links)
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            head, _, links = line.partition(":")
            name, folders = head.split()
            rooms[name] = (folders.split(","), links.split())
    return rooms


def check(rooms, src):
    owner = {folder: room for room, (folders, _) in rooms.items() for folder in folders}
    errors = []
    used = {room: set() for room in rooms}
    for room, (folders, links) in sorted(rooms.items()):
        for unknown in sorted(set(links) - set(rooms)):
            errors.append(f"room {room} links {unknown}, which is not a room")
        for folder in folders:
            directory = os.path.join(src, folder)
            for name in sorted(os.listdir(directory)):
                path = os.path.join(directory, name)
                if not name.endswith((".cpp", ".hpp", ".h", ".c", ".cu", ".cuh")):
                    continue
                with open(path, encoding="utf-8") as f:
                    for number, text in enumerate(f, 1):
                        m = INCLUDE.match(text)
                        if not m:
                            continue
                        header = m.group(1)
                        where = f"src/{folder}/{name}:{number}: #include \"{header}\""
                        first, slash, _ = header.partition("/")
                        if not slash:
                            if not os.path.exists(os.path.join(directory, header)):
                                errors.append(f"{where}: name its room's folder (\"room/{header}\")")
                            continue
                        if first == "pagoda":
                            continue
                        target = owner.get(first)
                        if target is None:
                            errors.append(f"{where}: {first}/ is no room of src/")
                        elif target != room:
                            if target in links:
                                used[room].add(target)
                            else:
                                errors.append(f"{where}: room {room} does not link room {target} "
                                              f"(its links: {' '.join(links) or 'none'})")
    for room, (_, links) in sorted(rooms.items()):
        for unused in sorted(set(links) & set(rooms) - used[room]):
            errors.append(f"room {room} links {unused} but includes none of its headers: "
                          "drop the link, the arrows are exactly what is used")
    return errors


def acyclic_order(rooms):
    order, state = [], {}

    def visit(room, path):
        if state.get(room) == "done":
            return
        if state.get(room) == "open":
            raise SystemExit("check_rooms: the links form a cycle: " + " -> ".join(path + [room]))
        state[room] = "open"
        for link in rooms[room][1]:
            if link in rooms:
                visit(link, path + [room])
        state[room] = "done"
        order.append(room)

    for room in sorted(rooms):
        visit(room, [])
    return order


def main(argv):
    parser = argparse.ArgumentParser(description="Checks src/'s includes against its rooms' links.")
    parser.add_argument("rooms", help="the rooms file src/CMakeLists.txt writes")
    parser.add_argument("src", help="the src/ folder")
    parser.add_argument("--stamp", help="a file to write when the check passes")
    parser.add_argument("--graph", action="store_true", help="print the link graph")
    args = parser.parse_args(argv)
    rooms = read_rooms(args.rooms)
    order = acyclic_order(rooms)
    if args.graph:
        for room in reversed(order):
            print(f"{room:10} -> {' '.join(rooms[room][1]) or '(nothing)'}")
    errors = check(rooms, args.src)
    for e in errors:
        print(f"check_rooms: {e}", file=sys.stderr)
    if errors:
        print(f"check_rooms: {len(errors)} include(s) against the rooms' links "
              "(src/CMakeLists.txt lists the links; ARCHITECTURE.md the arrows)", file=sys.stderr)
        return 1
    if args.stamp:
        with open(args.stamp, "w", encoding="utf-8") as f:
            f.write("rooms checked\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
