package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/plugkit/plugkit/compat"
	"github.com/plugkit/plugkit/handshake"
	"github.com/plugkit/plugkit/release"
)

func init() {
	commands["lock"] = command{
		summary: "record the digests of plugin releases for more platforms in a lock file, or lock a new plugin",
		run:     runLock,
	}
}

func runLock(args []string, stdout, stderr io.Writer) int {
	const usage = "plugkit lock --lock FILE --key PUB [--platform linux/amd64,darwin/arm64," + release.PlatformWasm + "] [SOURCE --kind KIND --majors 1,2 [--constraint C]] [--plain-http] [--ca-file FILE]\n\nWithout SOURCE, every plugin of the lock file gets the platforms named (all its release has, when none is). With SOURCE not yet locked, its newest fitting release (that has one of the platforms named) is locked without installing it."
	fs := newFlagSet("lock", usage, stderr)
	lockFile := fs.String("lock", "", "the lock `file`")
	keys := fs.String("key", "", "the publishers' public key `files` (PEM), comma separated")
	platforms := fs.String("platform", "", "the `platforms` to record, OS/ARCH, comma separated ("+release.PlatformWasm+": the WebAssembly module)")
	kind := fs.String("kind", "", "for SOURCE: the plugin `kind`")
	majors := fs.String("majors", "", "for SOURCE: the majors the host speaks, a comma `list`")
	constraint := fs.String("constraint", "", "for SOURCE: a version `constraint`")
	var reg registryFlags
	reg.register(fs)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return 2
	}
	if *lockFile == "" || *keys == "" || len(pos) > 1 {
		fmt.Fprintf(stderr, "plugkit lock: --lock and --key are required, and at most one SOURCE\nusage: %s\n", usage)
		return 2
	}
	var plats []string
	if *platforms != "" {
		plats = strings.Split(*platforms, ",")
	}
	pubs, err := release.LoadPublicKeys(strings.Split(*keys, ",")...)
	if err != nil {
		return fail(stderr, "lock", err)
	}
	lock, err := release.ReadLock(*lockFile)
	if err != nil {
		return fail(stderr, "lock", err)
	}
	ctx, cancel := reg.deadline()
	defer cancel()
	sources := make([]string, 0, len(lock.Plugins))
	for _, p := range lock.Plugins {
		sources = append(sources, p.Source)
	}
	if len(pos) == 1 {
		sources = pos
	}
	for _, src := range sources {
		repo, err := reg.open(src)
		if err != nil {
			return fail(stderr, "lock", err)
		}
		prev := lock.Find(repo.Source)
		var rel release.Release
		if prev != nil {
			rel, err = release.Fetch(ctx, repo, prev.Version)
		} else {
			if *kind == "" || *majors == "" {
				fmt.Fprintf(stderr, "plugkit lock: %s is not in %s yet: give --kind and --majors to choose its release\n", src, *lockFile)
				return 2
			}
			ms, perr := handshake.ParseVersions(*majors)
			if perr != nil {
				return fail(stderr, "lock", fmt.Errorf("--majors: %w", perr))
			}
			rel, err = release.Resolve(ctx, repo, release.Selection{Requirement: compat.Requirement{Kind: *kind, Majors: ms}, Constraint: *constraint, Platforms: plats})
		}
		if err != nil {
			return fail(stderr, "lock", err)
		}
		lp, err := release.LockRelease(ctx, repo, rel, pubs, *constraint, plats, prev)
		if err != nil {
			return fail(stderr, "lock", err)
		}
		lock.Set(lp)
		var got []string
		for _, b := range lp.Binaries {
			got = append(got, b.Platform)
		}
		fmt.Fprintf(stdout, "locked %s v%s for %s\n", repo.Source, rel.Version, strings.Join(got, ", "))
	}
	if err := lock.WriteFile(*lockFile); err != nil {
		return fail(stderr, "lock", err)
	}
	return 0
}
