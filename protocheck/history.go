package protocheck

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/plugkit/plugkit/protocheck/load"
	"github.com/plugkit/plugkit/protocheck/report"
	"github.com/plugkit/plugkit/protocheck/ruleset"
)

// HistoryOptions configures History. The zero value checks a directory with
// plugkit's rules and no released baseline.
type HistoryOptions struct {
	// Against, if set, is a git input (e.g. ".git#tag=v1.2,subdir=proto")
	// holding the already released versions: a versioned file present
	// there may only change in comments and whitespace.
	Against string
	// Load is passed to the loader for every version file.
	Load load.LoadOptions
	// BufCompat and BufNames are passed to Breaking for the minor-version
	// comparisons.
	BufCompat, BufNames bool
}

var versionedName = regexp.MustCompile(`^(.*?)(\d+)\.(\d+)\.proto$`)

// Version is one file of a versioned protocol: NAME<Major>.<Minor>.proto.
type Version struct {
	File         string // file name, e.g. "tfplugin5.3.proto"
	Name         string // e.g. "tfplugin"
	Major, Minor int
}

// ParseVersionedName parses a file name of the form NAME<major>.<minor>.proto.
func ParseVersionedName(file string) (Version, bool) {
	m := versionedName.FindStringSubmatch(filepath.Base(file))
	if m == nil || m[1] == "" {
		return Version{}, false
	}
	maj, err1 := strconv.Atoi(m[2])
	min, err2 := strconv.Atoi(m[3])
	if err1 != nil || err2 != nil {
		return Version{}, false
	}
	return Version{File: filepath.Base(file), Name: m[1], Major: maj, Minor: min}, true
}

// History checks the PROTOCOL rules on a directory of versioned protocol
// files (NAME<major>.<minor>.proto, e.g. tfplugin5.0.proto ...
// tfplugin6.9.proto): each minor version may only add to the previous minor
// of the same major (every WIRE_JSON rule applies, findings keep those
// rules' IDs and point into the newer file), the first file of a new major
// must use a different package than the previous major
// (MAJOR_VERSION_SAME_PACKAGE), and with opts.Against every file already
// released there may change only in comments and whitespace
// (RELEASED_FILE_CHANGED).
//
// Each version is compiled on its own as NAME<major>.proto, so versions of
// one major pair up like successive releases of one file.
func History(ctx context.Context, dir string, opts HistoryOptions) ([]report.Finding, error) {
	versions, err := versionFiles(dir)
	if err != nil {
		return nil, err
	}
	var out []report.Finding
	var prev *load.Image
	var prevV Version
	for i, v := range versions {
		img, err := loadVersion(ctx, dir, v, opts.Load)
		if err != nil {
			return nil, err
		}
		if i > 0 && prevV.Name == v.Name {
			fs, err := compareVersions(prev, img, prevV, v, opts)
			if err != nil {
				return nil, err
			}
			out = append(out, fs...)
		}
		prev, prevV = img, v
	}
	if opts.Against != "" {
		fs, err := releasedChanges(ctx, dir, versions, opts)
		if err != nil {
			return nil, err
		}
		out = append(out, fs...)
	}
	report.Sort(out)
	return out, nil
}

// versionFiles lists dir's NAME<major>.<minor>.proto files, ordered by
// name, major and minor.
func versionFiles(dir string) ([]Version, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("history: %w (give the directory holding NAME<major>.<minor>.proto files)", err)
	}
	var versions []Version
	for _, e := range entries {
		if v, ok := ParseVersionedName(e.Name()); ok && !e.IsDir() {
			versions = append(versions, v)
		}
	}
	if len(versions) == 0 {
		return nil, fmt.Errorf("history: no files named NAME<major>.<minor>.proto in %s", dir)
	}
	sort.Slice(versions, func(i, j int) bool {
		a, b := versions[i], versions[j]
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		if a.Major != b.Major {
			return a.Major < b.Major
		}
		return a.Minor < b.Minor
	})
	return versions, nil
}

// loadVersion compiles one version file under its canonical name
// (NAME<major>.proto), its compile errors naming the file itself.
func loadVersion(ctx context.Context, dir string, v Version, lo load.LoadOptions) (*load.Image, error) {
	data, err := os.ReadFile(filepath.Join(dir, v.File))
	if err != nil {
		return nil, err
	}
	lo.ImportPaths = append([]string{dir}, lo.ImportPaths...)
	img, err := load.NewImage(ctx, v.File, map[string][]byte{canonicalName(v): data}, lo)
	if err != nil {
		if ce, ok := err.(*load.CompileError); ok {
			for i := range ce.Problems {
				if ce.Problems[i].Path == canonicalName(v) {
					ce.Problems[i].Path = v.File
				}
			}
		}
		return nil, err
	}
	return img, nil
}

// compareVersions checks v against prevV, the version before it of the
// same name: a minor must keep the wire and JSON forms, and a new major
// must move to a package of its own.
func compareVersions(prev, img *load.Image, prevV, v Version, opts HistoryOptions) ([]report.Finding, error) {
	var out []report.Finding
	if prevV.Major != v.Major {
		a, b := img.Files[0].Desc, prev.Files[0].Desc
		if a.Package() == b.Package() {
			p := at(a, []int32{2})
			p.path = v.File
			out = append(out, report.Finding{Path: p.path, StartLine: p.sl, StartColumn: p.sc, EndLine: p.el, EndColumn: p.ec,
				Type: "MAJOR_VERSION_SAME_PACKAGE", Hint: "a new major version is a new protocol: name its package e.g. " + v.Name + strconv.Itoa(v.Major),
				Message: fmt.Sprintf("Major version %s keeps package %q of %s.", strings.TrimSuffix(v.File, ".proto"), string(a.Package()), strings.TrimSuffix(prevV.File, ".proto"))})
		}
		return out, nil
	}
	fs, err := Breaking(prev, img, Options{Use: []string{ruleset.CategoryWIREJSON}, BufCompat: opts.BufCompat, BufNames: opts.BufNames})
	if err != nil {
		return nil, err
	}
	for _, f := range fs {
		if f.Path == canonicalName(v) || f.Path == "" {
			f.Path = v.File
		}
		f.Message = fmt.Sprintf("%s against %s: %s", strings.TrimSuffix(v.File, ".proto"), strings.TrimSuffix(prevV.File, ".proto"), f.Message)
		out = append(out, f)
	}
	return out, nil
}

// releasedChanges reports each version file that changed, beyond comments
// and whitespace, since the release opts.Against names.
func releasedChanges(ctx context.Context, dir string, versions []Version, opts HistoryOptions) ([]report.Finding, error) {
	lo := opts.Load
	lo.Against = true
	released, err := load.ReadFiles(ctx, opts.Against, lo)
	if err != nil {
		return nil, err
	}
	var out []report.Finding
	for _, v := range versions {
		old, ok := released[v.File]
		if !ok {
			continue
		}
		cur, err := os.ReadFile(filepath.Join(dir, v.File))
		if err != nil {
			return nil, err
		}
		if line, col, changed := firstTokenChange(old, cur); changed {
			out = append(out, report.Finding{Path: v.File, StartLine: line, StartColumn: col, EndLine: line, EndColumn: col,
				Type:    "RELEASED_FILE_CHANGED",
				Message: fmt.Sprintf("Released file %q changed since %s: a released protocol version may change only in comments and whitespace.", v.File, opts.Against),
				Hint:    "put the change into a new minor version file instead"})
		}
	}
	return out, nil
}

func canonicalName(v Version) string { return v.Name + strconv.Itoa(v.Major) + ".proto" }

// token is one lexical token of a .proto file with its 1-based position.
type token struct {
	text      string
	line, col int
}

// protoTokens splits .proto source into tokens, dropping whitespace and
// comments.
func protoTokens(src []byte) []token {
	var out []token
	line, col := 1, 1
	i := 0
	adv := func(n int) {
		for k := 0; k < n && i < len(src); k++ {
			if src[i] == '\n' {
				line, col = line+1, 1
			} else {
				col++
			}
			i++
		}
	}
	isWord := func(b byte) bool {
		return b == '_' || b == '.' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= 0x80
	}
	for i < len(src) {
		b := src[i]
		switch {
		case b == ' ' || b == '\t' || b == '\r' || b == '\n' || b == '\f' || b == '\v':
			adv(1)
		case b == '/' && i+1 < len(src) && src[i+1] == '/':
			for i < len(src) && src[i] != '\n' {
				adv(1)
			}
		case b == '/' && i+1 < len(src) && src[i+1] == '*':
			adv(2)
			for i < len(src) && !(src[i] == '*' && i+1 < len(src) && src[i+1] == '/') {
				adv(1)
			}
			adv(2)
		case b == '"' || b == '\'':
			start, l, c := i, line, col
			adv(1)
			for i < len(src) && src[i] != b && src[i] != '\n' {
				if src[i] == '\\' {
					adv(1)
				}
				adv(1)
			}
			adv(1)
			out = append(out, token{string(src[start:i]), l, c})
		case isWord(b):
			start, l, c := i, line, col
			for i < len(src) && isWord(src[i]) {
				adv(1)
			}
			out = append(out, token{string(src[start:i]), l, c})
		default:
			out = append(out, token{string(b), line, col})
			adv(1)
		}
	}
	return out
}

// firstTokenChange compares two sources token by token and returns the
// position in cur of the first difference.
func firstTokenChange(old, cur []byte) (line, col int, changed bool) {
	a, b := protoTokens(old), protoTokens(cur)
	for i := range b {
		if i >= len(a) || a[i].text != b[i].text {
			return b[i].line, b[i].col, true
		}
	}
	if len(a) != len(b) {
		if len(b) > 0 {
			last := b[len(b)-1]
			return last.line, last.col, true
		}
		return 1, 1, true
	}
	return 0, 0, false
}
