package protocheck

import (
	"regexp"
	"sort"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/plugkit/plugkit/protocheck/bufconfig"
	"github.com/plugkit/plugkit/protocheck/load"
	"github.com/plugkit/plugkit/protocheck/report"
	"github.com/plugkit/plugkit/protocheck/ruleset"
)

// group is the modules of a bufconfig.Config that share one set of rules.
type group struct {
	opts     Options
	findings []report.Finding
	done     bool
}

// BreakingBuf is Breaking for inputs that carry a buf configuration
// (load.Image.Buf, read by load.Load from a buf.yaml or buf.work.yaml). Each module
// of the new input is checked with its own breaking configuration, as buf
// does:
//
//   - the rules are the module's use and except; a configuration without
//     use means buf's default, FILE. Flags override the file: opts.Use,
//     when set, replaces both (the file's except refers to its own use),
//     and opts.Except, when set, replaces the file's except;
//   - findings about files under the module's ignore paths, or under its
//     ignore_only paths for their rule, are dropped;
//   - with ignore_unstable_packages, findings about files of alpha, beta and
//     test packages are dropped.
//
// A finding is about the file it points at in the new input and the file
// its element came from in the old input (a deleted file, a message's old
// file); either one being ignored drops it, as in buf. Without a
// configuration BreakingBuf is Breaking.
func BreakingBuf(old, new *load.Image, opts Options) ([]report.Finding, error) {
	cfg := new.Buf
	if cfg == nil || len(cfg.Modules) == 0 {
		return Breaking(old, new, opts)
	}
	groups := map[string]*group{}
	modGroup := map[*bufconfig.Module]*group{}
	for _, m := range cfg.Modules {
		o := opts
		if len(o.Use) == 0 {
			o.Use = m.Breaking.Use
			if len(o.Use) == 0 {
				o.Use = []string{ruleset.CategoryFILE}
			}
			if len(o.Except) == 0 {
				o.Except = m.Breaking.Except
			}
		}
		key := strings.Join(o.Use, ",") + "\x00" + strings.Join(o.Except, ",")
		g := groups[key]
		if g == nil {
			g = &group{opts: o}
			groups[key] = g
		}
		modGroup[m] = g
	}
	if opts.BufCompat {
		return breakingPerModule(old, new, cfg, modGroup)
	}
	at := newAttribution(old, new)
	var out []report.Finding
	for _, m := range cfg.Modules {
		g := modGroup[m]
		if !g.done {
			fs, err := Breaking(old, new, g.opts)
			if err != nil {
				return nil, err
			}
			g.findings, g.done = fs, true
		}
	}
	for _, g := range groups {
		for _, f := range g.findings {
			newPath, againstPath := at.paths(f)
			m := at.module(cfg, newPath, againstPath)
			if modGroup[m] != g || at.ignored(m, f.Type, newPath, againstPath) {
				continue
			}
			out = append(out, f)
		}
	}
	report.Sort(out)
	return out, nil
}

// breakingPerModule checks each module of the new input against the same
// module of the old one, as buf does: each side is the module's files with
// everything they import, directly or not, from other modules and outside
// the input. So a file of another module (or a dependency) that a module
// imported before and no longer imports was deleted from that module's
// view (FILE_NO_DELETE, and PACKAGE_NO_DELETE or PACKAGE_MESSAGE_NO_DELETE
// for what it declared), though the file still exists. Findings that
// several modules share are reported once.
func breakingPerModule(old, new *load.Image, cfg *bufconfig.Config, modGroup map[*bufconfig.Module]*group) ([]report.Finding, error) {
	seen := map[report.Finding]bool{}
	var out []report.Finding
	for i, m := range cfg.Modules {
		nm := new.Module(m.Dir)
		om := old.Module(m.Dir)
		if len(om.Files) == 0 {
			// The old input has no such module: compare with the old
			// module at the same place in its configuration, else with
			// the whole old input.
			om = old
			if old.Buf != nil && i < len(old.Buf.Modules) {
				om = old.Module(old.Buf.Modules[i].Dir)
			}
		}
		fs, err := Breaking(om, nm, modGroup[m].opts)
		if err != nil {
			return nil, err
		}
		at := newAttribution(om, nm)
		for _, f := range fs {
			newPath, againstPath := at.paths(f)
			if seen[f] || at.ignored(m, f.Type, newPath, againstPath) {
				continue
			}
			seen[f] = true
			out = append(out, f)
		}
	}
	report.Sort(out)
	return out, nil
}

// attribution finds the files a finding is about.
type attribution struct {
	old, new *load.Image
	// oldFiles maps the full name of every element of the old image to
	// the path of the file declaring it.
	oldFiles map[protoreflect.FullName]string
	// oldPackages maps each package of the old image to its sorted files.
	oldPackages map[string][]string
	// spans holds, per new file, the source spans of its elements.
	spans map[string][]elemSpan
	// ruleSets caches ignore_only keys expanded to rule IDs.
	ruleSets map[string]map[string]bool
}

// elemSpan is the 1-based source span of one element.
type elemSpan struct {
	sl, sc, el, ec int
	name           protoreflect.FullName
}

func newAttribution(old, new *load.Image) *attribution {
	a := &attribution{old: old, new: new, oldFiles: map[protoreflect.FullName]string{},
		oldPackages: map[string][]string{}, spans: map[string][]elemSpan{}, ruleSets: map[string]map[string]bool{}}
	for _, f := range old.Files {
		p := f.Path
		walkElements(f.Desc, func(d protoreflect.Descriptor) { a.oldFiles[d.FullName()] = p })
		pkg := string(f.Desc.Package())
		a.oldPackages[pkg] = append(a.oldPackages[pkg], p)
	}
	for _, ps := range a.oldPackages {
		sort.Strings(ps)
	}
	return a
}

// walkElements calls fn for every named element declared in fd.
func walkElements(fd protoreflect.FileDescriptor, fn func(protoreflect.Descriptor)) {
	enum := func(e protoreflect.EnumDescriptor) {
		fn(e)
		for i := 0; i < e.Values().Len(); i++ {
			fn(e.Values().Get(i))
		}
	}
	var msg func(protoreflect.MessageDescriptor)
	msg = func(m protoreflect.MessageDescriptor) {
		fn(m)
		for i := 0; i < m.Fields().Len(); i++ {
			fn(m.Fields().Get(i))
		}
		for i := 0; i < m.Oneofs().Len(); i++ {
			fn(m.Oneofs().Get(i))
		}
		for i := 0; i < m.Extensions().Len(); i++ {
			fn(m.Extensions().Get(i))
		}
		for i := 0; i < m.Messages().Len(); i++ {
			msg(m.Messages().Get(i))
		}
		for i := 0; i < m.Enums().Len(); i++ {
			enum(m.Enums().Get(i))
		}
	}
	for i := 0; i < fd.Messages().Len(); i++ {
		msg(fd.Messages().Get(i))
	}
	for i := 0; i < fd.Enums().Len(); i++ {
		enum(fd.Enums().Get(i))
	}
	for i := 0; i < fd.Extensions().Len(); i++ {
		fn(fd.Extensions().Get(i))
	}
	for i := 0; i < fd.Services().Len(); i++ {
		s := fd.Services().Get(i)
		fn(s)
		for j := 0; j < s.Methods().Len(); j++ {
			fn(s.Methods().Get(j))
		}
	}
}

var quoted = regexp.MustCompile(`"([^"]*)"`)

// paths returns the new file a finding points at (an import path, or "")
// and the old file its element came from (or "").
func (a *attribution) paths(f report.Finding) (newPath, againstPath string) {
	if f.Path != "" {
		return f.Path, a.againstOfPosition(f)
	}
	// A finding about something gone with its file or package: the
	// message names the file, the package or the element.
	var qs []string
	for _, m := range quoted.FindAllStringSubmatch(f.Message, -1) {
		qs = append(qs, m[1])
	}
	for _, q := range qs {
		if a.old.File(q) != nil {
			return "", q
		}
	}
	for _, q := range qs {
		if p, ok := a.oldFiles[protoreflect.FullName(q)]; ok {
			return "", p
		}
		for _, pkg := range qs {
			if p, ok := a.oldFiles[protoreflect.FullName(pkg+"."+q)]; ok && pkg != "" {
				return "", p
			}
		}
	}
	for _, q := range qs {
		if ps := a.oldPackages[q]; len(ps) > 0 {
			return "", ps[0]
		}
	}
	return "", ""
}

// againstOfPosition finds the element of the new file at the finding's
// position and returns the old file that declared it (or its closest
// enclosing element); else the old file at the same path, if any.
func (a *attribution) againstOfPosition(f report.Finding) string {
	spans, ok := a.spans[f.Path]
	if !ok {
		if nf := a.new.File(f.Path); nf != nil {
			locs := nf.Desc.SourceLocations()
			walkElements(nf.Desc, func(d protoreflect.Descriptor) {
				loc := locs.ByDescriptor(d)
				if loc.StartLine == 0 && loc.EndLine == 0 && loc.StartColumn == 0 && loc.EndColumn == 0 {
					return
				}
				spans = append(spans, elemSpan{loc.StartLine + 1, loc.StartColumn + 1, loc.EndLine + 1, loc.EndColumn + 1, d.FullName()})
			})
		}
		a.spans[f.Path] = spans
	}
	var best *elemSpan
	for i := range spans {
		s := &spans[i]
		if before(f.StartLine, f.StartColumn, s.sl, s.sc) || before(s.el, s.ec, f.StartLine, f.StartColumn) {
			continue
		}
		if best == nil || before(best.sl, best.sc, s.sl, s.sc) {
			best = s
		}
	}
	if best != nil {
		for n := best.name; n != ""; n = n.Parent() {
			if p, ok := a.oldFiles[n]; ok {
				return p
			}
		}
	}
	if a.old.File(f.Path) != nil {
		return f.Path
	}
	return ""
}

// before reports whether line:col a comes before b.
func before(al, ac, bl, bc int) bool { return al < bl || al == bl && ac < bc }

// module returns the module of the new configuration a finding belongs
// to: that of its new file, else the one at the old file's module
// directory, else the first.
func (a *attribution) module(cfg *bufconfig.Config, newPath, againstPath string) *bufconfig.Module {
	dir := ""
	if f := a.new.File(newPath); f != nil {
		dir = f.Module
	} else if f := a.new.File(againstPath); f != nil {
		dir = f.Module
	} else if f := a.old.File(againstPath); f != nil {
		dir = f.Module
	}
	for _, m := range cfg.Modules {
		if m.Dir == dir {
			return m
		}
	}
	return cfg.Modules[0]
}

// ignored applies a module's ignore, ignore_only and
// ignore_unstable_packages to a finding of rule id about the given files.
func (a *attribution) ignored(m *bufconfig.Module, id, newPath, againstPath string) bool {
	b := &m.Breaking
	check := func(img *load.Image, p string) bool {
		if p == "" {
			return false
		}
		if bufconfig.HasPath(b.Ignore, p) {
			return true
		}
		for key, ps := range b.IgnoreOnly {
			if a.ruleSet(key)[id] && bufconfig.HasPath(ps, p) {
				return true
			}
		}
		if b.IgnoreUnstablePackages {
			if f := img.File(p); f != nil && bufconfig.UnstablePackage(string(f.Desc.Package())) {
				return true
			}
		}
		return false
	}
	return check(a.new, newPath) || check(a.old, againstPath)
}

// ruleSet expands an ignore_only key (a rule ID or category).
func (a *attribution) ruleSet(key string) map[string]bool {
	s, ok := a.ruleSets[key]
	if !ok {
		s, _ = ruleset.SelectRules([]string{key}, nil)
		a.ruleSets[key] = s
	}
	return s
}
