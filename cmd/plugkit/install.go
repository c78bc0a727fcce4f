package main

import (
	"context"
	"crypto"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/hashicorp/go-version"

	"github.com/plugkit/plugkit/compat"
	"github.com/plugkit/plugkit/handshake"
	"github.com/plugkit/plugkit/release"
)

func init() {
	commands["install"] = command{
		summary: "install the newest compatible, signed release of a plugin from an OCI registry or mirror",
		run:     runInstall,
	}
}

func runInstall(args []string, stdout, stderr io.Writer) int {
	const usage = "plugkit install SOURCE --kind KIND --majors 1,2 [--constraint \"~> 2.0\"] --dir DIR --key PUB --cookie KEY=VALUE [--lock FILE] [--cache DIR] [--wasm fallback|prefer|only|never] [--wasm-cache DIR [--wasm-cache-bytes N]] [--plain-http] [--ca-file FILE]\n\nSOURCE is REGISTRY/REPO, or oci-layout:DIR for a mirror. With --lock, a plugin the lock file lists installs exactly its locked release; any other is resolved and added to it. The newest release that fits and has a build for this machine (or a WebAssembly module, as --wasm allows) is chosen; newer ones without are passed over. A release's WebAssembly module (" + release.PlatformWasm + ") is installed as NAME.wasm when it has no binary for this machine, or as --wasm says."
	fs := newFlagSet("install", usage, stderr)
	kind := fs.String("kind", "", "the plugin `kind` the host uses")
	majors := fs.String("majors", "", "the majors of the kind the host speaks, a comma `list`")
	constraint := fs.String("constraint", "", "a version `constraint`, \"~> 2.0\" or \">= 1.2, < 3\"")
	dir := fs.String("dir", "", "the plugin `directory` to install into")
	keys := fs.String("key", "", "the publishers' public key `files` (PEM, cosign.pub), comma separated")
	cookie := fs.String("cookie", "", "the plugin's magic cookie, `KEY=VALUE`")
	lockFile := fs.String("lock", "", "the lock `file` to follow and update")
	cache := fs.String("cache", "", "a content-addressed cache `directory` of downloaded binaries")
	wasm := fs.String("wasm", "fallback", "`when` to install a release's WebAssembly module ("+release.PlatformWasm+") rather than its binary for this machine: fallback (when it has no such binary), prefer (whenever it has a module), only (a module or nothing) or never (the binary or nothing)")
	var wasmCache wasmCacheFlags
	wasmCache.register(fs, "the compilation cache `directory` of the host's WebAssembly plugins (the CacheDir of manager.Finder.Guests; plugkit plugins list: its --cache file + \".wasm\"): a module installed is compiled into it for its check, and the host's first start finds it compiled; without it, the check interprets the module")
	var reg registryFlags
	reg.register(fs)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return 2
	}
	if len(pos) != 1 || *kind == "" || *majors == "" || *dir == "" || *keys == "" || *cookie == "" {
		fmt.Fprintf(stderr, "plugkit install: SOURCE, --kind, --majors, --dir, --key and --cookie are required\nusage: %s\n", usage)
		return 2
	}
	if err := wasmCache.check(); err != nil {
		fmt.Fprintf(stderr, "plugkit install: %v\nusage: %s\n", err, usage)
		return 2
	}
	use, err := parseWasmUse(*wasm)
	ms, merr := handshake.ParseVersions(*majors)
	if err == nil && merr != nil {
		err = fmt.Errorf("--majors: %w", merr)
	}
	if err != nil {
		return fail(stderr, "install", err)
	}
	c, err := handshake.ParseCookie(*cookie)
	if err != nil {
		return fail(stderr, "install", err)
	}
	pubs, err := release.LoadPublicKeys(strings.Split(*keys, ",")...)
	if err != nil {
		return fail(stderr, "install", err)
	}
	repo, err := reg.open(pos[0])
	if err != nil {
		return fail(stderr, "install", err)
	}
	ctx, cancel := reg.deadline()
	defer cancel()
	lock := &release.Lock{}
	if *lockFile != "" {
		if lock, err = release.ReadLock(*lockFile); err != nil {
			return fail(stderr, "install", err)
		}
	}
	guests := checkRuntime(wasmCache)
	defer guests.Close(context.Background())
	target := release.Target{Dir: *dir, Keys: pubs, Cookie: c, Cache: *cache, Locked: lock.Find(repo.Source), Wasm: use, Guests: guests}
	target.Progress = downloadProgress(stderr) // a bar on a terminal (progress.go)
	var rel release.Release
	if target.Locked != nil {
		rel, err = release.Fetch(ctx, repo, target.Locked.Version)
	} else {
		rel, err = release.Resolve(ctx, repo, release.Selection{Requirement: compat.Requirement{Kind: *kind, Majors: ms}, Constraint: *constraint, Platforms: use.Platforms()})
	}
	if err != nil {
		return fail(stderr, "install", err)
	}
	if target.Locked != nil {
		if err := lockedFits(repo.Source, *lockFile, *kind, rel, ms, *constraint); err != nil {
			return fail(stderr, "install", err)
		}
	}
	inst, err := release.Install(ctx, repo, rel, target)
	if err != nil {
		return fail(stderr, "install", err)
	}
	fmt.Fprintf(stdout, "installed %s v%s (%s majors %v) as %s%s, sha256:%s\n", repo.Source, rel.Version, *kind, rel.Majors(*kind), inst.Path, moduleNote(inst), inst.SHA256)
	if *lockFile != "" && target.Locked == nil {
		if err := lockInstalled(ctx, repo, rel, pubs, *constraint, lock, *lockFile); err != nil {
			return fail(stderr, "install", err)
		}
		fmt.Fprintf(stdout, "locked %s v%s for %s in %s\n", repo.Source, rel.Version, strings.Join(rel.Platforms, ", "), *lockFile)
	}
	return 0
}

// lockInstalled adds the release installed to the lock file, every
// platform's digest.
func lockInstalled(ctx context.Context, repo *release.Repository, rel release.Release, pubs []crypto.PublicKey, constraint string, lock *release.Lock, lockFile string) error {
	lp, err := release.LockRelease(ctx, repo, rel, pubs, constraint, nil, nil)
	if err != nil {
		return err
	}
	lock.Set(lp)
	return lock.WriteFile(lockFile)
}

// moduleNote says an installed binary is the release's WebAssembly
// module.
func moduleNote(inst release.Installed) string {
	if inst.Platform != release.PlatformWasm {
		return ""
	}
	return " (the WebAssembly module, " + release.PlatformWasm + ")"
}

// wasmUses are --wasm's values.
var wasmUses = map[string]release.WasmUse{"fallback": release.WasmFallback, "prefer": release.WasmPrefer, "only": release.WasmOnly, "never": release.WasmNever}

// parseWasmUse reads --wasm.
func parseWasmUse(s string) (release.WasmUse, error) {
	use, ok := wasmUses[s]
	if !ok {
		return 0, fmt.Errorf("--wasm %q: want fallback (the module when the release has no binary for this machine), prefer, only or never", s)
	}
	return use, nil
}

// lockedFits refuses the release a lock file locks when this host cannot
// use it (none of its majors) or it does not meet the constraint given.
func lockedFits(source, lockFile, kind string, rel release.Release, majors []int, constraint string) error {
	if !slices.ContainsFunc(rel.Majors(kind), func(m int) bool { return slices.Contains(majors, m) }) {
		return fmt.Errorf("%s v%s, which %s locks, serves %s majors %v, and this host speaks %v: delete its entry from the lock file to choose a release again", source, rel.Version, lockFile, kind, rel.Majors(kind), majors)
	}
	if constraint == "" {
		return nil
	}
	c, err := version.NewConstraint(constraint)
	if err != nil {
		return fmt.Errorf("--constraint %q: %w (write e.g. \"~> 2.0\" or \">= 1.2, < 3\")", constraint, err)
	}
	v, err := version.NewVersion(rel.Version)
	if err != nil || !c.Check(v) {
		return fmt.Errorf("%s v%s, which %s locks, does not meet --constraint %q: delete its entry from the lock file to choose a release again, or change the constraint", source, rel.Version, lockFile, constraint)
	}
	return nil
}
