package kindgen

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// kind is one plugin kind of the input: its majors, oldest first.
type kind struct {
	name   string
	majors []*major
	cookie *directive // "plugkit: cookie KEY VALUE", or nil
}

// major is one protobuf package of a kind.
type major struct {
	kind  string
	num   int
	pkg   protoreflect.FullName
	files []*protogen.File
	file  *protogen.File // the file that holds the service
	svc   *protogen.Service
	// caps[i] is the capability of minor i+1.
	caps []string
	// since is the minor that added each RPC (0: the major's first
	// release), by the RPC's name.
	since map[protoreflect.Name]int
	// fieldSince is the minor that added each field (0: the major's
	// first release).
	fieldSince map[protoreflect.FullName]int
	where      string     // file:line of the package statement
	cookie     *directive // "plugkit: cookie KEY VALUE", or nil
}

// directive is a "plugkit: ..." line above a package statement.
type directive struct {
	words []string
	where string
}

var (
	majorPart = regexp.MustCompile(`^v([1-9][0-9]*)$`)
	capName   = regexp.MustCompile(`^[a-z][a-z0-9_-]*$`)
	kindName  = regexp.MustCompile(`^[a-z][a-z0-9_-]*$`)
)

// errorList collects the errors of the input, each starting with file:line.
type errorList []error

func (l *errorList) add(where, format string, args ...any) {
	*l = append(*l, fmt.Errorf("%s: %s", where, fmt.Sprintf(format, args...)))
}

// build reads the kinds of the files to generate.
func build(gen *protogen.Plugin) ([]*kind, error) {
	var errs errorList
	var order []protoreflect.FullName
	files := map[protoreflect.FullName][]*protogen.File{}
	for _, f := range gen.Files {
		if !f.Generate {
			continue
		}
		pkg := f.Desc.Package()
		if files[pkg] == nil {
			order = append(order, pkg)
		}
		files[pkg] = append(files[pkg], f)
	}
	// Packages in name order, so that what is generated and each error's
	// wording do not depend on the order protoc was given the files.
	slices.Sort(order)
	var majors []*major
	for _, pkg := range order {
		if m := newMajor(pkg, files[pkg], &errs); m != nil {
			majors = append(majors, m)
		}
	}
	kinds := groupKinds(majors, &errs)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return kinds, nil
}

// newMajor reads one package: its kind, major, minors, service and the
// minor of each RPC. It returns nil when errs got an error that leaves
// nothing to check further.
func newMajor(pkg protoreflect.FullName, files []*protogen.File, errs *errorList) *major {
	m := &major{pkg: pkg, files: files, where: packageWhere(files[0].Desc)}
	var dirs []directive
	for _, f := range files {
		for _, d := range directives(f.Desc) {
			switch d.words[0] {
			case "kind", "minor":
			case "cookie":
				if len(d.words) != 3 {
					errs.add(d.where, "write \"plugkit: cookie KEY VALUE\" (the kind's magic cookie, without spaces)")
				} else {
					m.cookie = &d
				}
				continue
			default:
				errs.add(d.where, "unknown directive %q: write \"plugkit: kind NAME\", \"plugkit: minor X.Y CAPABILITY\" or \"plugkit: cookie KEY VALUE\"", strings.Join(d.words, " "))
				continue
			}
			dirs = append(dirs, d)
		}
	}
	if !m.readKind(dirs, errs) {
		return nil
	}
	m.readMinors(dirs, errs)
	for _, f := range files {
		for _, s := range f.Services {
			if m.svc != nil {
				errs.add(sourceWhere(s.Desc), "package %s has a second service, %s (the first is %s): a major of a kind is one service", pkg, s.Desc.Name(), m.svc.Desc.Name())
				continue
			}
			m.svc, m.file = s, f
		}
	}
	if m.svc == nil {
		errs.add(m.where, "package %s (kind %q, major %d) has no service: a major of a kind is one service", pkg, m.kind, m.num)
		return nil
	}
	m.readSince(errs)
	return m
}

// readKind sets the kind and major from the package name and a "plugkit:
// kind NAME" directive.
func (m *major) readKind(dirs []directive, errs *errorList) bool {
	parts := strings.Split(string(m.pkg), ".")
	last := parts[len(parts)-1]
	if sub := majorPart.FindStringSubmatch(last); sub != nil {
		m.num, _ = strconv.Atoi(sub[1])
		if len(parts) >= 2 {
			m.kind = parts[len(parts)-2]
		}
	}
	for _, d := range dirs {
		if d.words[0] != "kind" {
			continue
		}
		if len(d.words) != 2 || !kindName.MatchString(d.words[1]) {
			errs.add(d.where, "write \"plugkit: kind NAME\", NAME in lower case (letters, digits, - and _)")
			return false
		}
		m.kind = d.words[1]
	}
	switch {
	case m.num == 0:
		errs.add(m.where, "package %s declares no kind and major: name it <kind>.v<major> (such as %s.v1), and add \"// plugkit: kind NAME\" above the package statement if the kind is not the part before .v<major>", m.pkg, last)
		return false
	case m.kind == "":
		errs.add(m.where, "package %s declares no kind: name it <kind>.v%d or add \"// plugkit: kind NAME\" above the package statement", m.pkg, m.num)
		return false
	}
	return true
}

// readMinors reads the "plugkit: minor X.Y CAPABILITY" directives: one per
// minor, 1 to the newest without a gap.
func (m *major) readMinors(dirs []directive, errs *errorList) {
	byMinor := map[int]directive{}
	for _, d := range dirs {
		if d.words[0] != "minor" {
			continue
		}
		const form = "write \"plugkit: minor %d.Y CAPABILITY\" (CAPABILITY in lower case: letters, digits, - and _)"
		if len(d.words) != 3 || !capName.MatchString(d.words[2]) {
			errs.add(d.where, form, m.num)
			continue
		}
		maj, min, ok := parseVersion(d.words[1])
		if !ok || maj != m.num || min < 1 {
			errs.add(d.where, "minor %q is not a minor of %s v%d: "+form, d.words[1], m.kind, m.num, m.num)
			continue
		}
		if prev, dup := byMinor[min]; dup {
			errs.add(d.where, "minor %d.%d is declared twice (first at %s)", m.num, min, prev.where)
			continue
		}
		byMinor[min] = d
	}
	mins := make([]int, 0, len(byMinor))
	for min := range byMinor {
		mins = append(mins, min)
	}
	sort.Ints(mins)
	seen := map[string]string{}
	for i, min := range mins {
		d := byMinor[min]
		if min != i+1 {
			errs.add(d.where, "minor %d.%d is declared, but %d.%d is not: minors of a major follow each other without a gap", m.num, min, m.num, i+1)
			return
		}
		if first, dup := seen[d.words[2]]; dup {
			errs.add(d.where, "capability %q already announces another minor (at %s): each minor has its own", d.words[2], first)
		}
		seen[d.words[2]] = d.where
		m.caps = append(m.caps, d.words[2])
	}
}

// parseVersion parses MAJOR.MINOR or MAJOR.MINOR.PATCH, with an optional
// -prerelease.
func parseVersion(v string) (major, minor int, ok bool) {
	core, _, _ := strings.Cut(v, "-")
	parts := strings.Split(core, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return 0, 0, false
	}
	var nums [2]int
	for i := range nums {
		n, err := strconv.Atoi(parts[i])
		if err != nil || n < 0 {
			return 0, 0, false
		}
		nums[i] = n
	}
	return nums[0], nums[1], true
}

// groupKinds groups majors by kind, refusing two packages of one major.
func groupKinds(majors []*major, errs *errorList) []*kind {
	byName := map[string]*kind{}
	var kinds []*kind
	for _, m := range majors {
		k := byName[m.kind]
		if k == nil {
			k = &kind{name: m.kind}
			byName[m.kind] = k
			kinds = append(kinds, k)
		}
		if c := m.cookie; c != nil {
			if k.cookie != nil && strings.Join(k.cookie.words, " ") != strings.Join(c.words, " ") {
				errs.add(c.where, "%s v%d declares cookie %s=%s, but %s declares %s=%s: a kind has one cookie", m.kind, m.num, c.words[1], c.words[2], k.cookie.where, k.cookie.words[1], k.cookie.words[2])
			}
			k.cookie = c
		}
		dup := false
		for _, o := range k.majors {
			if o.num == m.num {
				errs.add(m.where, "packages %s (%s) and %s both claim %s v%d: a major is one package", o.pkg, o.where, m.pkg, m.kind, m.num)
				dup = true
			}
		}
		if !dup {
			k.majors = append(k.majors, m)
		}
	}
	for _, k := range kinds {
		sort.Slice(k.majors, func(i, j int) bool { return k.majors[i].num < k.majors[j].num })
	}
	sort.Slice(kinds, func(i, j int) bool { return kinds[i].name < kinds[j].name })
	return kinds
}

// previous returns the major before m in k, or nil.
func (k *kind) previous(m *major) *major {
	for i, o := range k.majors {
		if o == m && i > 0 && k.majors[i-1].num == m.num-1 {
			return k.majors[i-1]
		}
	}
	return nil
}

// sourceWhere is file:line of a descriptor.
func sourceWhere(d protoreflect.Descriptor) string {
	loc := d.ParentFile().SourceLocations().ByDescriptor(d)
	return fmt.Sprintf("%s:%d", d.ParentFile().Path(), loc.StartLine+1)
}

// packageWhere is file:line of a file's package statement.
func packageWhere(fd protoreflect.FileDescriptor) string {
	loc := fd.SourceLocations().ByPath(protoreflect.SourcePath{2})
	return fmt.Sprintf("%s:%d", fd.Path(), loc.StartLine+1)
}

// directives returns the "plugkit: ..." lines of the comments above a
// file's syntax and package statements.
func directives(fd protoreflect.FileDescriptor) []directive {
	var out []directive
	for _, path := range []protoreflect.SourcePath{{12}, {2}} {
		loc := fd.SourceLocations().ByPath(path)
		texts := append([]string{loc.LeadingComments}, loc.LeadingDetachedComments...)
		for _, text := range texts {
			for _, line := range strings.Split(text, "\n") {
				rest, ok := strings.CutPrefix(strings.TrimSpace(line), "plugkit:")
				if !ok {
					continue
				}
				words := strings.Fields(rest)
				if len(words) == 0 {
					words = []string{""}
				}
				out = append(out, directive{words: words, where: fmt.Sprintf("%s:%d", fd.Path(), loc.StartLine+1)})
			}
		}
	}
	return out
}
