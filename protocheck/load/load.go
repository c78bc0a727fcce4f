package load

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/bufbuild/protocompile"
	"github.com/bufbuild/protocompile/reporter"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/plugkit/plugkit/protocheck/bufconfig"
)

// LoadOptions configures Load. The zero value loads a directory or git input
// with no extra import paths.
type LoadOptions struct {
	// ImportPaths are extra directories searched for imports that are not in
	// the input itself (like protoc's -I). The standard google/protobuf
	// imports are always available.
	ImportPaths []string
	// Dir is the directory relative inputs and git repositories are resolved
	// against. Empty means the current directory.
	Dir string

	// Config, when not empty, replaces the buf.yaml (and buf.work.yaml)
	// at the input's root, as buf's --config: a file name, or the
	// configuration itself in YAML or JSON (anything starting with "{" or
	// holding a newline or "version:").
	Config string
	// AgainstConfig is Config for the input LoadPair checks against (buf's
	// --against-config).
	AgainstConfig string

	// Against marks the input as the one checked against (--against), so
	// that errors say so. LoadPair sets it for its against input.
	Against bool
}

// label names the input in errors: kind ("input", "git input"), prefixed
// with "--against" for the input checked against.
func (o LoadOptions) label(kind string) string {
	if o.Against {
		return "--against " + kind
	}
	return kind
}

// Image is a compiled set of .proto files: the files of one input, paired
// with another Image by Breaking.
type Image struct {
	// Input is the input string the image was loaded from.
	Input string
	// Root is the prefix that turns a File.Path into a path to show to
	// people: the input directory as given ("" for "." and for git inputs).
	Root string
	// Files are the input's own files (not their imports), sorted by Path.
	Files []*File

	// Buf is the input's buf.yaml or buf.work.yaml layout and breaking
	// configuration, or nil when its root has neither.
	Buf *bufconfig.Config

	byPath map[string]*File
	// imports are the files the input's files import, directly or not,
	// that are not part of the input (e.g. google/protobuf/timestamp.proto).
	imports map[string]protoreflect.FileDescriptor
}

// Imports returns the files the image's files import, directly or not,
// that are not part of the image (e.g. google/protobuf/timestamp.proto,
// a dependency's file, a file of another module of the workspace), sorted
// by path.
func (img *Image) Imports() []protoreflect.FileDescriptor {
	out := make([]protoreflect.FileDescriptor, 0, len(img.imports))
	for _, fd := range img.imports {
		out = append(out, fd)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path() < out[j].Path() })
	return out
}

// Import returns the imported file with the given path, or nil.
func (img *Image) Import(path string) protoreflect.FileDescriptor { return img.imports[path] }

// WithoutImports returns img without the files it imports, as buf's
// --exclude-imports sees an input.
func (img *Image) WithoutImports() *Image {
	cp := *img
	cp.imports = nil
	return &cp
}

// Module returns the part of img that is the module at dir (File.Module):
// its files, and as imports everything they import that is not one of
// them, as buf compares the modules of a workspace one by one.
func (img *Image) Module(dir string) *Image {
	sub := &Image{Input: img.Input, Root: img.Root, Buf: img.Buf, byPath: map[string]*File{}}
	for _, f := range img.Files {
		if f.Module == dir {
			sub.Files = append(sub.Files, f)
			sub.byPath[f.Path] = f
		}
	}
	sub.collectImports()
	return sub
}

// collectImports fills img.imports with every file img's files import,
// directly or not, that is not one of them.
func (img *Image) collectImports() {
	img.imports = map[string]protoreflect.FileDescriptor{}
	var add func(fd protoreflect.FileDescriptor)
	add = func(fd protoreflect.FileDescriptor) {
		for i := 0; i < fd.Imports().Len(); i++ {
			dep := fd.Imports().Get(i).FileDescriptor
			if _, own := img.byPath[dep.Path()]; own {
				continue
			}
			if _, done := img.imports[dep.Path()]; !done {
				img.imports[dep.Path()] = dep
				add(dep)
			}
		}
	}
	for _, f := range img.Files {
		add(f.Desc)
	}
}

// File is one compiled .proto file of an Image.
type File struct {
	// Path is the file's path relative to the input root, with forward
	// slashes, e.g. "tfplugin5.proto" or "foo/v1/foo.proto".
	Path string
	// Source is the file's content.
	Source []byte
	// Desc is the linked descriptor, with source code info.
	Desc protoreflect.FileDescriptor
	// Module is the directory of the file's module relative to the input
	// root ("." without a buf configuration): the file is at Module/Path.
	Module string
}

// File returns the file with the given path, or nil.
func (img *Image) File(path string) *File { return img.byPath[path] }

// gitInput is a parsed buf-style git input such as ".git#tag=v1,subdir=proto".
type gitInput struct {
	repo, tag, branch, ref, subdir string
}

// parseGitInput reports whether input is a git input and parses it.
func parseGitInput(input string, opts LoadOptions) (gitInput, bool, error) {
	repo, spec, ok := strings.Cut(input, "#")
	if !ok {
		if strings.HasSuffix(input, ".git") {
			return gitInput{repo: input}, true, nil
		}
		return gitInput{}, false, nil
	}
	g := gitInput{repo: repo}
	if g.repo == "" {
		g.repo = "."
	}
	for _, kv := range strings.Split(spec, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || v == "" {
			return g, true, fmt.Errorf("%s %q: option %q is not key=value (use tag=, branch=, ref= and subdir=)", opts.label("git input"), input, kv)
		}
		switch k {
		case "tag":
			g.tag = v
		case "branch":
			g.branch = v
		case "ref", "commit":
			g.ref = v
		case "subdir":
			g.subdir = path.Clean(strings.Trim(filepath.ToSlash(v), "/"))
		case "depth", "recurse_submodules":
			// Accepted for compatibility with buf; local git needs neither.
		default:
			return g, true, fmt.Errorf("%s %q: unknown option %q (use tag=, branch=, ref= and subdir=)", opts.label("git input"), input, k)
		}
	}
	n := 0
	for _, s := range []string{g.tag, g.branch, g.ref} {
		if s != "" {
			n++
		}
	}
	if n > 1 {
		return g, true, fmt.Errorf("%s %q: give only one of tag=, branch= and ref=", opts.label("git input"), input)
	}
	return g, true, nil
}

// Load reads and compiles the .proto files of input, which is a directory or
// a git input in buf's form: "REPO#tag=v1.2", "#branch=main", "#ref=SHA",
// each optionally followed by ",subdir=DIR". REPO is a local repository's
// directory or its .git directory and defaults to the current directory.
//
// Files that fail to compile give a *CompileError listing every problem
// with its position.
//
// When the input's root holds a buf.work.yaml or a buf.yaml (v1beta1, v1
// or v2), Load honours its layout as buf does: each module's files get
// import paths relative to the module's root, excluded directories and
// files outside every module are left out, and Image.Buf keeps the
// breaking configuration for BreakingBuf.
func Load(ctx context.Context, input string, opts LoadOptions) (*Image, error) {
	in, err := readPrepared(ctx, input, opts)
	if err != nil {
		return nil, err
	}
	return in.compile(ctx, opts, nil)
}

// LoadPair loads an input and the input it is checked against, as Load
// does for each, sharing work between them: both are read at the same
// time, and each file of input that is byte for byte the file of against
// at the same path, with all it imports equally unchanged, is not compiled
// again but reuses against's compiled descriptor. A history of releases
// changes a few files at a time, so most of input costs nothing. The
// errors are those of input and of against.
func LoadPair(ctx context.Context, input, against string, opts LoadOptions) (cur, old *Image, curErr, oldErr error) {
	var oldIn *preparedInput
	done := make(chan struct{})
	go func() {
		defer close(done)
		aopts := opts
		aopts.Against = true
		aopts.Config, aopts.AgainstConfig = opts.AgainstConfig, ""
		oldIn, oldErr = readPrepared(ctx, against, aopts)
		if oldErr == nil {
			old, oldErr = oldIn.compile(ctx, aopts, nil)
		}
	}()
	curIn, curErr := readPrepared(ctx, input, opts)
	<-done
	if curErr == nil {
		cur, curErr = curIn.compile(ctx, opts, old)
	}
	return cur, old, curErr, oldErr
}

// preparedInput is an input read from disk or git with its buf layout
// applied: sources by import path, ready to compile.
type preparedInput struct {
	input   string
	sources map[string][]byte
	dirs    map[string]string // import path to module directory
	cfg     *bufconfig.Config
	// workspace holds, by import path, the files of the other modules of
	// a workspace found in a parent directory: imports, not checked.
	workspace map[string][]byte
}

func readPrepared(ctx context.Context, input string, opts LoadOptions) (*preparedInput, error) {
	files, err := readInput(ctx, input, opts)
	if err != nil {
		return nil, err
	}
	override, err := opts.configData()
	if err != nil {
		return nil, fmt.Errorf("%s %q: %w", opts.label("input"), input, err)
	}
	if override != nil {
		// --config replaces the configuration at the input's root.
		delete(files, bufconfig.BufWorkYAML)
		files[bufconfig.BufYAML] = override
	}
	cfg, err := bufconfig.Parse(files)
	if err != nil {
		return nil, fmt.Errorf("%s %q: %w", opts.label("input"), input, err)
	}
	var workspace map[string][]byte
	// A v1 module's buf.yaml may be one directory of a buf.work.yaml
	// above it.
	v1Module := cfg != nil && cfg.File == bufconfig.BufYAML && cfg.Version != "v2"
	if (cfg == nil || v1Module) && override == nil {
		if _, isGit, _ := parseGitInput(input, opts); !isGit {
			dir := input
			if opts.Dir != "" && !filepath.IsAbs(dir) {
				dir = filepath.Join(opts.Dir, dir)
			}
			if wcfg, ws := parentWorkspace(dir, v1Module); wcfg != nil {
				cfg, workspace = wcfg, ws
			}
		}
	}
	in := &preparedInput{input: input, sources: files, cfg: cfg, workspace: workspace}
	if cfg != nil {
		if in.sources, in.dirs, err = cfg.Layout(files); err != nil {
			return nil, fmt.Errorf("%s %q: %w", opts.label("input"), input, err)
		}
	} else {
		for p := range files {
			if !strings.HasSuffix(p, ".proto") {
				delete(files, p)
			}
		}
	}
	return in, nil
}

// compile compiles a prepared input, reusing unchanged files of reuse
// (nil for none).
func (in *preparedInput) compile(ctx context.Context, opts LoadOptions, reuse *Image) (*Image, error) {
	if in.cfg != nil {
		// The buf.lock dependencies found in buf's module cache.
		opts.ImportPaths = append(append([]string(nil), opts.ImportPaths...), in.cfg.DepDirs()...)
	}
	img, err := compileSources(ctx, in.input, displayRoot(in.input), in.sources, in.workspace, opts, reuse)
	if err != nil {
		if ce, ok := err.(*CompileError); ok && in.cfg != nil {
			ce.MissingDeps = in.cfg.MissingDeps()
			ce.ConfigFile = in.cfg.File
			// Problems are found by import path; show them where the
			// files are.
			for i := range ce.Problems {
				pr := &ce.Problems[i]
				if dir, ok := in.dirs[pr.file]; ok && dir != "." {
					pr.Path = joinPath(displayRoot(in.input), dir+"/"+pr.file)
				}
			}
		}
		return nil, err
	}
	img.Buf = in.cfg
	for _, f := range img.Files {
		f.Module = "."
		if d, ok := in.dirs[f.Path]; ok {
			f.Module = d
		}
	}
	return img, nil
}

// standardImport reports whether an import resolves to one of the
// standard google/protobuf files linked into the program (the same
// descriptor in every compilation), not to a file of an -I directory.
func standardImport(p string, importPaths []string) bool {
	if _, err := protoregistry.GlobalFiles.FindFileByPath(p); err != nil {
		return false
	}
	for _, dir := range importPaths {
		if _, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(p))); err == nil {
			return false
		}
	}
	return true
}

// reusable returns the files of sources that need no compiling because
// reuse holds the same file, byte for byte, whose imports are all equally
// unchanged or come from outside both inputs.
func reusable(sources map[string][]byte, reuse *Image, importPaths []string) map[string]protoreflect.FileDescriptor {
	out := map[string]protoreflect.FileDescriptor{}
	if reuse == nil {
		return out
	}
	state := map[string]int8{} // 1 reusable, -1 not, 2 in progress
	var check func(p string) bool
	check = func(p string) bool {
		switch state[p] {
		case 1:
			return true
		case -1, 2:
			return false
		}
		state[p] = 2
		ok := false
		if of := reuse.byPath[p]; of != nil && bytes.Equal(of.Source, sources[p]) {
			ok = true
			imps := of.Desc.Imports()
			for i := 0; i < imps.Len() && ok; i++ {
				ip := imps.Get(i).Path()
				_, ownNew := sources[ip]
				_, ownOld := reuse.byPath[ip]
				switch {
				case ownNew:
					ok = check(ip)
				case ownOld:
					ok = false // an own file of against, resolved elsewhere now
				default:
					// Outside both inputs: only a standard import is the
					// same descriptor in both compilations; a file from
					// an -I directory is compiled anew each time.
					ok = standardImport(ip, importPaths)
				}
			}
		}
		if ok {
			state[p] = 1
			out[p] = reuse.byPath[p].Desc
		} else {
			state[p] = -1
		}
		return ok
	}
	for p := range sources {
		check(p)
	}
	return out
}

// displayRoot is the prefix shown before file paths of input.
func displayRoot(input string) string {
	if _, isGit, _ := parseGitInput(input, LoadOptions{}); isGit {
		return ""
	}
	root := filepath.ToSlash(filepath.Clean(input))
	if root == "." {
		return ""
	}
	return root
}

// DisplayPath turns a file path of the image (an import path) into the
// path to show to people: the image's Root and the file's module directory
// joined before it.
func (img *Image) DisplayPath(p string) string {
	if img == nil || p == "" {
		return p
	}
	if f := img.byPath[p]; f != nil && f.Module != "" && f.Module != "." {
		p = f.Module + "/" + p
	}
	if img.Root == "" {
		return p
	}
	return img.Root + "/" + p
}

// ModulePaths reports whether some file of the image lives in a module
// below the input root, so that its import path differs from its path in
// the input.
func (img *Image) ModulePaths() bool {
	for _, f := range img.Files {
		if f.Module != "" && f.Module != "." {
			return true
		}
	}
	return false
}

// ReadFiles reads the .proto and buf configuration files of input (a
// directory or a git input, as Load takes), by path relative to the input,
// without compiling them.
func ReadFiles(ctx context.Context, input string, opts LoadOptions) (map[string][]byte, error) {
	return readInput(ctx, input, opts)
}

func readInput(ctx context.Context, input string, opts LoadOptions) (map[string][]byte, error) {
	g, isGit, err := parseGitInput(input, opts)
	if err != nil {
		return nil, err
	}
	if isGit {
		return readGit(ctx, input, g, opts)
	}
	dir := input
	if opts.Dir != "" && !filepath.IsAbs(dir) {
		dir = filepath.Join(opts.Dir, dir)
	}
	return readDir(input, dir, opts)
}

func readDir(input, dir string, opts LoadOptions) (map[string][]byte, error) {
	st, err := os.Stat(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s %q: directory does not exist (give a directory of .proto files or a git input such as .git#branch=main)", opts.label("input"), input)
		}
		return nil, fmt.Errorf("%s %q: %w", opts.label("input"), input, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%s %q is not a directory (give a directory of .proto files or a git input such as .git#branch=main)", opts.label("input"), input)
	}
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, fmt.Errorf("%s %q: %w", opts.label("input"), input, err)
	}
	sources := map[string][]byte{}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != dir && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(d.Name(), ".proto") && !bufconfig.IsConfigFile(d.Name()) {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		data, err := readProtoFile(root, p)
		if err != nil {
			return err
		}
		sources[filepath.ToSlash(rel)] = data
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s %q: %w", opts.label("input"), input, err)
	}
	if !hasProto(sources) {
		return nil, fmt.Errorf("%s %q: no .proto files found", opts.label("input"), input)
	}
	return sources, nil
}

// hasProto reports whether files holds a .proto file.
func hasProto(files map[string][]byte) bool {
	for p := range files {
		if strings.HasSuffix(p, ".proto") {
			return true
		}
	}
	return false
}

// MaxFileSize is the largest .proto file plugkit proto reads (16 MiB); a
// larger one is refused by name rather than read.
const MaxFileSize = 16 << 20

// readProtoFile reads the .proto file at path, which must be a regular
// file inside root once symlinks are resolved: a FIFO would block the
// read, a device (a link to /dev/zero) never ends, and a link may point
// anywhere on the machine. The size is capped at MaxFileSize.
func readProtoFile(root, path string) ([]byte, error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, err
	}
	if !within(root, real) {
		return nil, fmt.Errorf("%s leads to %s, outside the input %s: refused to read it", path, real, root)
	}
	fi, err := os.Lstat(real)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%v): refused to read it", path, fi.Mode().Type())
	}
	if fi.Size() > MaxFileSize {
		return nil, fmt.Errorf("%s is %d bytes, over the %d-byte limit for a .proto file", path, fi.Size(), MaxFileSize)
	}
	f, err := os.Open(real)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("%s grew over the %d-byte limit for a .proto file while it was read", path, MaxFileSize)
	}
	return data, nil
}

// within reports whether path is root or below it.
func within(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../") && !filepath.IsAbs(rel)
}

// importResolver finds imports in the -I directories: only relative,
// clean import paths, and only regular files inside those directories.
func importResolver(dirs []string) protocompile.Resolver {
	return protocompile.ResolverFunc(func(p string) (protocompile.SearchResult, error) {
		clean := path.Clean(p)
		if path.IsAbs(p) || clean != p || clean == ".." || strings.HasPrefix(clean, "../") {
			return protocompile.SearchResult{}, fmt.Errorf("import %q: import paths must be relative and clean, without .. elements", p)
		}
		for _, dir := range dirs {
			full := filepath.Join(dir, filepath.FromSlash(clean))
			if _, err := os.Lstat(full); err != nil {
				continue
			}
			root, err := filepath.EvalSymlinks(dir)
			if err != nil {
				return protocompile.SearchResult{}, err
			}
			data, err := readProtoFile(root, full)
			if err != nil {
				return protocompile.SearchResult{}, err
			}
			return protocompile.SearchResult{Source: bytes.NewReader(data)}, nil
		}
		return protocompile.SearchResult{}, fs.ErrNotExist
	})
}

func gitCommand(ctx context.Context, repo, baseDir string, args ...string) *exec.Cmd {
	if baseDir != "" && !filepath.IsAbs(repo) {
		repo = filepath.Join(baseDir, repo)
	}
	var full []string
	if st, err := os.Stat(repo); err == nil && st.IsDir() && strings.HasSuffix(filepath.Clean(repo), ".git") {
		full = append([]string{"--git-dir", repo}, args...)
	} else {
		full = append([]string{"-C", repo}, args...)
	}
	return exec.CommandContext(ctx, "git", full...)
}

func readGit(ctx context.Context, input string, g gitInput, opts LoadOptions) (map[string][]byte, error) {
	baseDir := opts.Dir
	rev := "HEAD"
	switch {
	case g.tag != "":
		rev = "refs/tags/" + g.tag
	case g.branch != "":
		rev = g.branch
	case g.ref != "":
		rev = g.ref
	}
	var stderr bytes.Buffer
	cmd := gitCommand(ctx, g.repo, baseDir, "rev-parse", "--verify", "--quiet", rev+"^{commit}")
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if g.branch != "" {
			// A branch that only exists on a remote.
			cmd = gitCommand(ctx, g.repo, baseDir, "rev-parse", "--verify", "--quiet", "origin/"+g.branch+"^{commit}")
			out, err = cmd.Output()
		}
		if err != nil {
			if _, lookErr := exec.LookPath("git"); lookErr != nil {
				return nil, fmt.Errorf("%s %q: the git command is needed: %w", opts.label("git input"), input, lookErr)
			}
			return nil, fmt.Errorf("%s %q: %q is not a commit, tag or branch of repository %q (list them with git tag and git branch -a)%s", opts.label("git input"), input, rev, g.repo, trimStderr(stderr.String()))
		}
	}
	commit := strings.TrimSpace(string(out))
	// A zip archive, stored without compression: archive/tar would link
	// os/user, whose cgo build makes every binary importing this package
	// dynamically linked, and plugkit-proto pays the dynamic loader at
	// each start.
	args := []string{"archive", "--format=zip", "-0", commit}
	if g.subdir != "" && g.subdir != "." {
		args = append(args, "--", g.subdir)
	}
	stderr.Reset()
	cmd = gitCommand(ctx, g.repo, baseDir, args...)
	cmd.Stderr = &stderr
	zipData, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s %q: git archive of %s failed (does subdir %q exist at that commit?)%s", opts.label("git input"), input, commit, g.subdir, trimStderr(stderr.String()))
	}
	sources := map[string][]byte{}
	zr, err := zip.NewReader(bytes.NewReader(zipData), int64(len(zipData)))
	if err != nil {
		return nil, fmt.Errorf("%s %q: reading archive: %w", opts.label("git input"), input, err)
	}
	prefix := ""
	if g.subdir != "" && g.subdir != "." {
		prefix = g.subdir + "/"
	}
	for _, f := range zr.File {
		if !f.Mode().IsRegular() || !(strings.HasSuffix(f.Name, ".proto") || bufconfig.IsConfigFile(f.Name)) || !strings.HasPrefix(f.Name, prefix) {
			continue
		}
		data, err := readZipFile(f)
		if err != nil {
			return nil, fmt.Errorf("%s %q: reading archive: %w", opts.label("git input"), input, err)
		}
		sources[strings.TrimPrefix(f.Name, prefix)] = data
	}
	if !hasProto(sources) {
		return nil, fmt.Errorf("%s %q: no .proto files at %s (check subdir=)", opts.label("git input"), input, commit)
	}
	return sources, nil
}

func readZipFile(f *zip.File) ([]byte, error) {
	r, err := f.Open()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

func trimStderr(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	return ": " + s
}

// compileSources compiles sources (import path to content) as the files of
// input; workspace supplies, by import path, files they may import that
// are not theirs (the other modules of a parent workspace), and reuse
// compiled files to take over unchanged (nil for none).
func compileSources(ctx context.Context, input, root string, sources, workspace map[string][]byte, opts LoadOptions, reuse *Image) (*Image, error) {
	names := make([]string, 0, len(sources))
	for name := range sources {
		names = append(names, name)
	}
	sort.Strings(names)
	done := reusable(sources, reuse, opts.ImportPaths)
	local := protocompile.ResolverFunc(func(p string) (protocompile.SearchResult, error) {
		if d, ok := done[p]; ok {
			return protocompile.SearchResult{Desc: d}, nil
		}
		if data, ok := sources[p]; ok {
			return protocompile.SearchResult{Source: bytes.NewReader(data)}, nil
		}
		if data, ok := workspace[p]; ok {
			return protocompile.SearchResult{Source: bytes.NewReader(data)}, nil
		}
		return protocompile.SearchResult{}, fs.ErrNotExist
	})
	var resolver protocompile.Resolver = local
	if len(opts.ImportPaths) > 0 {
		imports := importResolver(opts.ImportPaths)
		resolver = protocompile.ResolverFunc(func(p string) (protocompile.SearchResult, error) {
			if r, err := local.FindFileByPath(p); err == nil {
				return r, nil
			}
			return imports.FindFileByPath(p)
		})
	}
	var problems []CompileProblem
	var cf columnFixer
	rep := reporter.NewReporter(func(err reporter.ErrorWithPos) error {
		problems = append(problems, newProblem(&cf, root, sources, err))
		return nil
	}, nil)
	c := protocompile.Compiler{
		Resolver:       protocompile.WithStandardImports(resolver),
		SourceInfoMode: protocompile.SourceInfoStandard,
		Reporter:       rep,
	}
	files, err := c.Compile(ctx, names...)
	if err != nil && len(problems) == 0 {
		var ewp reporter.ErrorWithPos
		switch {
		case errors.Is(err, fs.ErrNotExist) && errors.As(err, &ewp):
			// The compiler stops at the first import it cannot resolve:
			// find them all, as buf lists them.
			problems = missingImports(root, sources, protocompile.WithStandardImports(resolver))
			if len(problems) == 0 {
				problems = append(problems, newProblem(&cf, root, sources, ewp))
			}
		case errors.As(err, &ewp):
			problems = append(problems, newProblem(&cf, root, sources, ewp))
		default:
			problems = append(problems, CompileProblem{Message: err.Error()})
		}
	}
	if len(problems) > 0 {
		sortProblems(problems)
		return nil, &CompileError{Input: input, Against: opts.Against, Problems: problems}
	}
	img := &Image{Input: input, Root: root, byPath: map[string]*File{}}
	for i, fd := range files {
		f := &File{Path: names[i], Source: sources[names[i]], Desc: fd}
		img.Files = append(img.Files, f)
		img.byPath[f.Path] = f
	}
	img.collectImports()
	return img, nil
}

// NewImage compiles in-memory sources (path to content) as an Image. It is
// Load for callers that already hold the files, such as tests and tools
// reading from archives.
func NewImage(ctx context.Context, name string, sources map[string][]byte, opts LoadOptions) (*Image, error) {
	cp := make(map[string][]byte, len(sources))
	for k, v := range sources {
		cp[k] = v
	}
	return compileSources(ctx, name, "", cp, nil, opts, nil)
}
