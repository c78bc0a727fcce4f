package kindgen

import (
	"strings"

	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/plugkit/plugkit/protocheck"
)

// readSince checks every "Since:" line of the package's elements (the
// ADR-044 lines that `plugkit proto breaking` asks for, parsed by
// protocheck) and records the minor that added each RPC.
func (m *major) readSince(errs *errorList) {
	m.fieldSince = map[protoreflect.FullName]int{}
	for _, f := range m.files {
		for _, msg := range f.Messages {
			m.checkMessage(msg, errs)
		}
		for _, e := range f.Enums {
			m.checkEnum(e, errs)
		}
	}
	m.since = map[protoreflect.Name]int{}
	svcMinor := m.minorOf(m.svc.Desc, errs)
	for _, meth := range m.svc.Methods {
		m.since[meth.Desc.Name()] = max(svcMinor, m.minorOf(meth.Desc, errs))
	}
}

func (m *major) checkMessage(msg *protogen.Message, errs *errorList) {
	m.minorOf(msg.Desc, errs)
	for _, f := range msg.Fields {
		m.fieldSince[f.Desc.FullName()] = m.minorOf(f.Desc, errs)
	}
	for _, n := range msg.Messages {
		if !n.Desc.IsMapEntry() {
			m.checkMessage(n, errs)
		}
	}
	for _, e := range msg.Enums {
		m.checkEnum(e, errs)
	}
}

func (m *major) checkEnum(e *protogen.Enum, errs *errorList) {
	m.minorOf(e.Desc, errs)
	for _, v := range e.Values {
		m.minorOf(v.Desc, errs)
	}
}

// minorOf returns the minor of m that d's Since lines name (0 without
// one), adding an error for each line that does not name a declared minor
// of m.
func (m *major) minorOf(d protoreflect.Descriptor, errs *errorList) int {
	loc := d.ParentFile().SourceLocations().ByDescriptor(d)
	minor := 0
	for _, text := range []string{loc.LeadingComments, loc.TrailingComments} {
		for _, line := range strings.Split(text, "\n") {
			if !protocheck.IsSinceLine(line) {
				continue
			}
			if n, ok := m.sinceMinor(d, strings.TrimSpace(line), errs); ok {
				minor = max(minor, n)
			}
		}
	}
	return minor
}

// sinceMinor parses one Since line of d.
func (m *major) sinceMinor(d protoreflect.Descriptor, line string, errs *errorList) (int, bool) {
	where := sourceWhere(d)
	s, err := protocheck.ParseSince(line)
	if err != nil {
		errs.add(where, "%s: %q: %v", d.FullName(), line, err)
		return 0, false
	}
	if s.Name != m.kind {
		errs.add(where, "%s: %q names %q, but package %s is kind %q", d.FullName(), line, s.Name, m.pkg, m.kind)
		return 0, false
	}
	for _, v := range s.Versions {
		maj, min, ok := parseVersion(v)
		if !ok || maj != m.num {
			continue
		}
		if min > len(m.caps) {
			errs.add(where, "%s: %q is newer than %s v%d's newest minor, %d.%d: declare %d.%d with \"// plugkit: minor %d.%d CAPABILITY\" above the package statement (%s)",
				d.FullName(), line, m.kind, m.num, m.num, len(m.caps), m.num, min, m.num, min, m.where)
			return 0, false
		}
		return min, true
	}
	errs.add(where, "%s: %q names no version of %s v%d (write \"Since: %s %d.MINOR\")", d.FullName(), line, m.kind, m.num, m.kind, m.num)
	return 0, false
}
