package pagoda

import (
	"bufio"
	"bytes"
	"fmt"
	"os/exec"
	"reflect"
	"strings"
	"testing"
)

// printedLayout is what pagoda-abi-layout prints: per struct its size and alignment, per field
// its offset and size.
type printedLayout struct {
	structs map[string][2]uintptr            // name -> sizeof, alignof
	fields  map[string]map[string][2]uintptr // struct -> field -> offset, size
}

func readLayout(t *testing.T) printedLayout {
	t.Helper()
	tool := toolPath(t, "PAGODA_ABI_LAYOUT")
	out, err := exec.Command(tool).Output()
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	l := printedLayout{map[string][2]uintptr{}, map[string]map[string][2]uintptr{}}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var kind, name string
		var a, b uintptr
		if _, err := fmt.Sscanf(sc.Text(), "%s %s %d %d", &kind, &name, &a, &b); err != nil {
			t.Fatalf("unreadable line %q: %v", sc.Text(), err)
		}
		switch kind {
		case "struct":
			l.structs[name] = [2]uintptr{a, b}
		case "field":
			dot := strings.IndexByte(name, '.')
			if dot < 0 {
				t.Fatalf("field without a struct: %q", sc.Text())
			}
			s, f := name[:dot], name[dot+1:]
			if l.fields[s] == nil {
				l.fields[s] = map[string][2]uintptr{}
			}
			l.fields[s][f] = [2]uintptr{a, b}
		default:
			t.Fatalf("unknown line %q", sc.Text())
		}
	}
	if len(l.structs) == 0 {
		t.Fatalf("%s printed no struct", tool)
	}
	return l
}

// The binding's structs (cgo's view of the headers it was compiled with) have the sizes and
// offsets of the built library's, and the binding declares every public struct and every field
// of the ones it covers: a field appended to a header fails here until the binding handles it.
func TestLayoutMatchesLibrary(t *testing.T) {
	printed := readLayout(t)
	declared := map[string]bool{}
	for _, s := range layoutTable() {
		declared[s.name] = true
		got, ok := printed.structs[s.name]
		if !ok {
			t.Errorf("%s: not printed by pagoda-abi-layout", s.name)
			continue
		}
		if got != [2]uintptr{s.size, s.align} {
			t.Errorf("%s: size/align %v in the library, %v in the binding", s.name, got, [2]uintptr{s.size, s.align})
		}
		mine := map[string]bool{}
		for _, f := range s.fields {
			mine[f.name] = true
			pf, ok := printed.fields[s.name][f.name]
			if !ok {
				t.Errorf("%s.%s: not in the library's header", s.name, f.name)
				continue
			}
			if pf != [2]uintptr{f.offset, f.size} {
				t.Errorf("%s.%s: offset/size %v in the library, %v in the binding", s.name, f.name, pf,
					[2]uintptr{f.offset, f.size})
			}
		}
		for f := range printed.fields[s.name] {
			if !mine[f] {
				t.Errorf("%s.%s: in the header, unknown to the binding", s.name, f)
			}
		}
	}
	for name := range printed.structs {
		if !declared[name] && notCoveredStructs[name] == "" {
			t.Errorf("struct %s: in the headers, neither declared by the binding nor listed as left out", name)
		}
	}
}

// Every exported field of the binding's Go structs maps to a C field, and numbers keep their
// C size: a conversion that silently narrows or widens would fail here.
func TestGoFieldsMapped(t *testing.T) {
	for _, s := range layoutTable() {
		if s.goType == nil {
			continue
		}
		mapped := map[string]bool{}
		for _, f := range s.fields {
			if f.goField == "" {
				if s.note == "" {
					t.Errorf("%s.%s: no Go field and no note saying why", s.name, f.name)
				}
				continue
			}
			mapped[f.goField] = true
			gf, ok := s.goType.FieldByName(f.goField)
			if !ok {
				t.Errorf("%s.%s: %s has no field %s", s.name, f.name, s.goType, f.goField)
				continue
			}
			switch gf.Type.Kind() {
			case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Int,
				reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uint,
				reflect.Float32, reflect.Float64:
				if gf.Type.Size() != f.size {
					t.Errorf("%s.%s: %d bytes in C, %s.%s is %s (%d bytes)", s.name, f.name, f.size,
						s.goType.Name(), f.goField, gf.Type, gf.Type.Size())
				}
			}
		}
		for i := 0; i < s.goType.NumField(); i++ {
			if name := s.goType.Field(i).Name; !mapped[name] {
				t.Errorf("%s.%s: no C field of %s maps to it", s.goType.Name(), name, s.name)
			}
		}
	}
}
