#!/usr/bin/env bash
# The layout printer covers every struct of the public headers but the plugin ABI's (ops.h,
# ops_moe.h, and plugin.h's but its device info), as layout_printer_gen.py selects them, and prints their fields.
#   check_layout_printer.sh PRINTER INCLUDE_DIR
set -euo pipefail
out=$("$1")
headers=()
for h in "$2"/pagoda/*.h; do
    case $(basename "$h") in ops.h|ops_moe.h|plugin.h) ;; *) headers+=("$h") ;; esac
done
want=$(( $(cat "${headers[@]}" | grep -c '^typedef struct [a-z_]* {') + 1 ))  # + device info
got=$(grep -c '^struct ' <<<"$out")
[[ $got == "$want" ]] || { echo "printer covers $got structs, the headers have $want" >&2; exit 1; }
for line in 'struct pagoda_output_t ' 'field pagoda_output_t.request_finished ' \
            'struct pagoda_device_info_t ' 'field pagoda_engine_metrics_t.request_queue_time '; do
    grep -q "^$line" <<<"$out" || { echo "missing: $line" >&2; exit 1; }
done
echo "layout printer: $got structs, $(grep -c '^field ' <<<"$out") fields"
