// Package faults is plugkit's fault suite: plugins and hosts that
// misbehave, each case a test run by make test (go test -race ./faults/).
// Every case checks that the caller gets a clear error, that nothing is
// lost (a failed call or a truncated stream is reported, never a clean
// end), and that nothing is left running: goroutines (goleak at exit),
// processes (each test tags the processes it starts and scans /proc for
// survivors) and socket directories. The test binary doubles as every
// plugin and host the cases need (children_test.go).
//
// Cases and where they live:
//
//   - crashes mid-call, mid-stream: TestCrashMidCall, TestCrashMidStream
//     (the panic reaches the host's log as an error). Through the manager
//     (restart, Init replay, a crash during a Put): manager's
//     TestRestartAfterCrashReplaysInit and TestCallInFlightDuringCrashFails.
//   - hangs in a call: TestHangingCall (the caller's deadline is honoured,
//     calls beside it work, Close still ends within its steps). A hung
//     process killed and replaced by the manager: manager's
//     TestHungPluginIsKilledAndRestarted. A plugin that ignores SIGTERM:
//     host's TestCloseEscalatesToSIGKILL.
//   - never prints the handshake, prints garbage before it, exits at once
//     with a message, answers health NOT_SERVING: TestStartFailures adds
//     to host's TestStartFailures (which holds the message details) the
//     time bound, no process left, no socket directory left, goroutines
//     and open files back to where they were.
//   - floods stderr with 100 MiB while serving: TestStderrFlood (calls keep
//     working, every line is logged, the host's heap stays bounded).
//   - writes hostile lines (JSON with non-string @message, control bytes,
//     invalid UTF-8, a 3 MiB line, no newline) on fd 2 and through the
//     stdio stream: TestHostileLines; the basic hostile set: host's
//     TestHostileStderrIsLoggedNotFatal, and against go-plugin: interop.
//   - leaks its socket directory: TestSIGKILLedPlugin, TestCrashMidCall,
//     and with a real go-plugin plugin interop's TestNoStaleGoPluginSockets.
//     Every launched plugin gets a private directory of its host's
//     (plugkit-host-NNN, its PLUGIN_UNIX_SOCKET_DIR), where plugkit and
//     go-plugin v1.5+ plugins and the host's brokered servers make their
//     sockets; once the host has reaped the plugin, Close (or the failed
//     Start) removes the whole directory, whatever the plugin did. A
//     reattached plugin's socket is never touched. Directories of hosts
//     that were SIGKILLed are swept by the next host (an flock on
//     .owner tells a live owner from a dead one).
//   - a host killed with SIGKILL: TestSIGKILLedHost (its plugin is gone
//     within 1 s, through Pdeathsig and the parent watch together and
//     through Pdeathsig alone); the parent watch alone, under a host that
//     does not set Pdeathsig: plugin's TestPluginExitsWhenItsHostDies.
//   - a local process without the client certificate: TestStrangerIsRefused
//     (plain gRPC and TLS with its own self-signed certificate both fail).
//   - a tampered binary with checksum pinning: TestTamperedBinaryNeverRuns
//     (proof by a marker file that it never ran); the launch counts:
//     manager's TestPinnedChecksum.
//   - the hostile cases of the hardening issue, each in its package's own
//     tests: a pinned binary swapped between check and exec (host's
//     TestPinnedBinarySwappedAfterCheck) or behind a cache with its mtime
//     restored (manager's TestPinNotTrustedFromCache); malformed and shared
//     cache files (TestMalformedCacheIsRebuilt, TestSharedCacheKeepsEveryEntry);
//     a broker flood (broker's TestAnnouncementsAreBounded); stdio lines of
//     64 MiB (host's TestStdioLinesAreCapped); a handshake naming another
//     plugin's socket (TestHandshakeNamingAnotherSocket); Start from a locked
//     thread that exits (TestStartFromAnExitingLockedThread); a huge sparse
//     binary against Discover's deadline (TestDiscoverHonoursContextWhileHashing);
//     a failed start's socket directory (TestFailedStartLeavesNoSocketDir);
//     the host's own handshake variables (TestHostThatIsAPluginDoesNotLeakItsHandshake,
//     TestInheritedEnvironment); cancelled calls (TestCancelledCallsReturnAtOnce);
//     a Shutdown that never answers (TestCloseBoundedByTwoStopTimeouts); the
//     plugin's children (TestCloseStopsWhatThePluginStarted); TCP without TLS
//     (TestWarnsWhenTCPWithoutTLS); escape sequences through the CLI
//     (cmd/plugkit's TestPluginTextIsEscaped).
//   - the attacks of the second hardening issue (19), each point with the
//     tests that failed before its fix:
//     1. sandbox escape: sandbox's TestSandboxProcSysReadOnly (core_pattern,
//     hostname, drop_caches), TestSandboxMasksKernelFiles (/proc/kcore,
//     keys, sysrq-trigger, timer_list, sched_debug, /sys/firmware),
//     TestSandboxOwnNamespaces (UTS, IPC with a host SysV segment, cgroup),
//     TestSandboxMinimalDev (no /dev/kmsg), TestSandboxedPluginRunsUnprivileged
//     and TestSandboxedPluginRunsAsConfiguredUser (uid and gid not 0),
//     TestSandboxSeccompFilter (mount, unshare, ptrace, add_key get EPERM)
//     and trampoline's TestSeccompPolicy (every denied call, 32-bit and
//     unknown calls, nothing killed); host's TestRunnerSocketGroup.
//     2. knock floods: broker's TestKnockFloodIsBounded (200,000 knocks from
//     a peer that never reads, plain and multiplexed), TestStalledPeerEndsTheStream,
//     TestMuxKnockWaitersLeaveOnTimeout, TestLimitedWarning; end to end from
//     a plugin process: host's TestKnockFloodFromPlugin.
//     3. service mode: plugin's TestServiceExitsWithinDrainDespiteStalledHandshakes
//     (300 stalled TLS handshakes, exit within the drain plus 1 s),
//     TestServiceHandshakeTimeoutAndCap, TestServiceLimitsFromEnvironment,
//     TestServiceHealthPortWatchFloodBounded (20,000 Watch streams on one
//     connection), TestServiceInflightBudgetBoundsMemory (eight 60 MiB
//     requests), TestServiceInflightBudgetRefusesAndReleases and
//     TestFrameSnifferFindsMessageSizes.
//     4. a hostile cache file: manager's TestCacheFIFO, TestCacheSymlinkToDevZero,
//     TestCacheHugeFile, TestCacheSymlinkNotWrittenThrough,
//     TestReadCacheFileHonoursContext, TestWriteCacheKeepsOthersWhenContextEnds,
//     TestRemoteCacheKeptWhenContextEnds; internal/osdep's TestOpenNoFollow.
//     5. a lying or 10 MB Describe answer: manager's TestLyingDescribe;
//     symlink loops and unreadable entries: TestDiscoverSkipsHostileEntries,
//     TestDiscoverSkipsUnreadableEntries; a forged reattach to another
//     user's socket: host's TestReattachRefusesAnotherUsersSocketFile,
//     TestReattachRefusesAnotherUsersListener and cmd/plugkit's
//     TestReattachForeignSocket; certificate rotation in service mode held
//     with calls in flight and is kept as a guard:
//     plugin's TestServiceRotationWithCallsInFlight; a host's flood of
//     yamux streams: broker's
//     TestMuxStreamFloodIsBounded.
//     6. the net/rpc refusal's explanation: cmd/plugkit's TestInspectNetRPCPlugin
//     (the CLI's output) and handshake's TestParseRejects.
//     7. fuzzing: make fuzz runs every Fuzz target of the module (handshake
//     line and environment, reattach JSON, stderr log lines, the describe
//     and remote caches, the Describe answer, the release index, buf.yaml
//     and buf.work.yaml, certificates), each with its seed corpus, which
//     make test runs as ordinary tests.
//     8. build outputs in git: the root package's TestNoBuildOutputsTracked.
//   - the attacks of issue 36 (untrusted plugins stay inside), each point
//     with the tests that failed before its fix:
//     1. the host's terminal (TIOCSTI, TIOCSPGRP, /dev/tty, the host's pts)
//     in root, rootless and LandlockOnly modes, through a pty the test
//     makes: sandbox's TestSandboxHostTerminal; the filter's arguments:
//     sandbox/internal/trampoline's TestSeccompArgRules.
//     2. shared memory past a rootless memory limit (MAP_SHARED|MAP_ANONYMOUS,
//     memfd, MAP_SHARED of /dev/zero, System V shm): sandbox's
//     TestSandboxMemoryLimitSharedMemory (refused under RLIMIT_DATA, killed
//     by the cgroup as root) and sandbox/internal/trampoline's
//     TestSeccompRefusesSharedMemory.
//     3. set-user-ID files in a grant, grants nosuid and nodev:
//     TestSandboxGrantNoSetID.
//     4. the host user's supplementary groups: TestSandboxRootlessGroups.
//     5. the socket directory: sandbox's TestSandboxSocketDirBounded (300 MiB
//     written there), TestSandboxBrokerListenersBounded (10,000 brokered
//     listeners) and BenchmarkCloseManyListeners (Close's time).
//     6. the host's environment: TestSandboxEnvironment.
//     7. the cause of death at Close: sandbox's
//     TestSandboxCloseReportsMemoryLimit (Close at once after the memory
//     limit, root and rootless) and wasmhost's TestCloseReportsCauseAtOnce
//     (MemoryError and host.BudgetError).
//     8. symlinks out of a WebAssembly guest's grant: wasmhost's
//     TestGrantSymlinkEscape (a guest-made ../../.. link: listing, reading,
//     writing, changing, renaming and linking through it; chains; a link
//     in the middle of a path; absolute targets), TestGrantHostSymlinks
//     (the host's links in read-only and writable grants; EROFS),
//     TestGrantSwapDirForSymlink and TestGrantSwapRace (a directory swapped
//     for a link out, between calls and during 3000 reads), and
//     TestIsolationSymlinks (the real guest, through host.Start).
//     9. tiny modules that kill or freeze the host: wasmhost's
//     TestLocalsBombRefused, TestTableGrowBombRefused,
//     TestManyFunctionsRefused, TestNestedBlocksRefused,
//     TestCompileHonoursContext, TestGuestMemoryHostCost (each in a child
//     process) and TestModuleSizeLimit; manager's
//     TestDiscoverRefusesModuleBomb.
//     Also: UDP out of LandlockOnly mode: TestSandboxLandlockOnly; vsock and
//     other socket families: TestSandboxSocketFamilies; the cgroup view:
//     TestSandboxCgroupView.
//   - the attacks of issue 37, each point with the tests that failed
//     before its fix:
//     1. a downgrade by re-tagging (the signed 1.3.0 served as 9.0.0):
//     release's TestInstallRefusesADowngradeByRetagging (install and lock).
//     2. bytes before trust (an unsigned 10 GB layer, the signature held
//     back): release's TestInstallDownloadsNothingBeforeTheSignatureVerifies.
//     3. unbounded metadata: release's TestResolveBoundsTagListing (endless
//     pages, full and empty), TestResolveBoundsIndexBytes (150 tags of a
//     3.9 MB index; one index over its bound), TestResolveBoundsTime; the
//     flags: cmd/plugkit's TestReleasePushInstallLock (--max-tags). The
//     costs before and after: release's TestHostileRegistryCost.
//     4. the install lock file through a planted link: release's
//     TestInstallLockFileIsNotFollowed; lock-file binary names that are not
//     plain file names: TestParseLockRefusesNamesThatAreNotPlain.
//     5. Slowloris: plugin's TestServiceServesHostBesideIdleConnections
//     (1,000 idle connections, silent or stalled after a TLS record
//     header, beside a host's call).
//     6. headers outside the budget: plugin's TestServiceRefusesHugeHeaders
//     (72 Health/Watch calls with 8 MiB of headers; the service's peak RSS
//     measured in its own process), TestServiceHeadersCountAgainstBudget.
//     7. a host killed at any step of the handshake: plugin's
//     TestPluginExitsWhenItsHostDiesAtEveryStep (four steps, 20 kills each,
//     six at once); host's TestWithHostPID; the SDKs (make test-sdk):
//     sdk/sdktest's TestPluginOfADeadHostExits.
//     8. no wait on a plugin's own error answer: manager's
//     TestAnsweredErrorsDoNotWait; BenchmarkCallErrorPath compares the
//     Internal and OK paths.
//   - the attacks of issue 43, each point with the tests that failed
//     before its fix:
//     1. one 60 MiB stdio message of newlines, plain and gzip: host's
//     TestStdioBombPeakMemory (the host's VmHWM in a process of its own).
//     2. compressed requests starving a service's other clients: plugin's
//     TestServiceCompressedRequestsDoNotStarveOthers (16 streams of tiny
//     gzip requests), TestServiceConnectionShareOfBudget.
//     3. duplicate names across binaries: manager's
//     TestDuplicateNamesOneProblemPerPair and FuzzDescribe, describe's
//     TestCheckCapsNames; BenchmarkDuplicateNames.
//     4. log injection (escape sequences, OSC 52, carriage returns, bidi
//     controls, a newline in @message; fields named as the host's keys,
//     @timestamp): host's TestPluginTextIsEscapedInTheDefaultLogger,
//     TestPluginTextIsEscapedInTextAndJSON,
//     TestPluginFieldsCannotTakeTheHostsKeys.
//     5. TCP reattach to another's listener: host's
//     TestReattachRefusesAnotherUsersTCPListener (a listener of uid 65534,
//     Pid 1), TestReattachRefusesTCPListenerOfAnotherPid; an unchecked
//     one (other systems, nothing listening) is refused unless trusted:
//     host's TestReattachUncheckedTCPListener, plugkit's
//     TestReattachTrustTCPListener (--trust-tcp-listener).
//     6. the SDKs against a hostile host: sdk/python's test_inflight_budget
//     and MalformedEnvTest, sdk/node's "the in-flight budget refuses ..."
//     and "a malformed environment ..." (make test-sdk), and sdktest's
//     TestMalformedEnvironmentAsGo (Go, Python and Node plugins alike).
//     7. key policy: release's TestKeyPolicy (RSA-1024 and RSA-512 refused
//     saying why; P-256, P-384, Ed25519 and RSA-2048 trusted); each payload
//     fetched once: TestSignaturePayloadFetchedOnce; bidirectional controls
//     escaped: cmd/plugkit's TestPluginTextIsEscaped.
//   - the attacks of issue 42 (row 5: a guest's calls without wazero's
//     per-loop exit to Go; the guest's own stop checks take its place),
//     each with the test that failed before its fix:
//     5. a guest that computes for ever (a loop that never calls out)
//     ends at a stop, compiled and interpreted: wasmhost's
//     TestStopEndsComputingGuest (ran on after Stop without the checks); a
//     module that sets the stop global to clear it is refused before it
//     runs: TestGuestCannotClearStop (compiled and spun without the
//     refusal); Runtime.Close does not close the files of a guest still
//     in a host call: TestCloseWaitsAtMostCloseWait under -race (a data
//     race in wazero's file table without the wait); a guest that spins
//     while Go's garbage collector stops the world (it waited for the
//     guest forever, the whole host still): TestSpinningGuestLetsGCRun
//     (its process hung before the guest left its machine code every
//     65,536 loop headers).
//   - the attacks of issue 42 (found while measuring row 6, remote unary
//     over a veth), with the test that failed before its fix (package
//     plugin):
//     6. a plugin service with its own grpc.Creds could not be reached:
//     the in-flight budget, blind to sizes there, charged each read a
//     whole connection share, which a host's health watch kept from its
//     other calls: TestServiceWithOwnCredentialsServesHostDial (host.Dial's
//     health check timed out); the budget still bounds memory under those
//     credentials: TestServiceInflightBudgetBoundsMemory's "own
//     credentials" case (226 MiB above a 64 MiB budget with reads charged
//     only once decoded).
//   - the attacks of issue 42 (row 5, round 2: a guest's calls without
//     HTTP/2, internal/guestcall's chunks and call streams; the path is
//     new, so each bound was seen to fail by removing it):
//     5. a guest that answers a chunk of 4 GiB, a header or trailer of 4
//     GiB, a message over the call's limit, a frame of no known kind, a
//     metadata count of 2^60, no status, two answers to a unary call, a
//     status that is not one, or nothing at all, to a unary call and to a
//     streaming one: guestcall's TestHostileGuestAnswers and
//     TestSilentGuestCallEnds (without the chunk bound the host allocated
//     4 GiB for the chunk; without the frame bound, 4 GiB for each 4 GiB
//     frame of a stream and 64 MiB for its message).
//   - the attacks of issue 42 (row 3: one poller for all plugins'
//     stdout; the socket directories' locks, kept one a directory):
//     3. another host's sweep (its first start) removing the directory of
//     a plugin whose host lives, and a dead host's directory left
//     unswept: host's TestSweepSparesLiveHost; the poller logs a plugin's
//     stdout line for line as a goroutine a pipe did, whatever the pieces
//     it reads (lines over 64 KiB cut and marked, no newline at the end):
//     host's TestPushLogsAsConsume.
//   - the attacks of issue 42 (rows 2-3, round 4: the stop at once of an
//     idle host's plugin; the socket directory's lock on the stdout pipe):
//     2. a Close that cuts a call in flight (the host counts its calls and
//     tells the plugin it is idle only with none): host's
//     TestCloseLetsCallsInFlightFinish, plugin's TestShutdownIdle (without
//     the header a plugin stops gracefully, with it at once).
//     3. a sweep that removes a live host's directory, or hangs opening a
//     dead host's lock now that it is a named pipe: host's
//     TestSweepSparesLiveHost; the descriptor spared:
//     TestHostCostPerPlugin (4 a plugin).
//   - the attacks of issue 42 (row 2, round 5: a plugin under Serve
//     leaves its connections to its exit when its idle host stops it):
//     3. the promises kept: Run still returns (plugin's
//     TestShutdownIdle, case "idle, exiting", which failed before with the
//     connection torn down by Stop); a call in flight keeps the graceful
//     stop (host's TestCloseLetsCallsInFlightFinish, plugin's
//     TestShutdownIdle); spans flushed (host's TestPluginFlushesSpansOnExit);
//     the socket directory removed (every host test, testutil.Main).
//   - the attacks of issue 40 (points 4 to 10: metrics and traces as
//     Prometheus and OpenTelemetry users expect), each point with the
//     tests that failed before its fix:
//     4. series that grow with restarts (a socket path as server_address):
//     manager's TestPrometheusSeriesDoNotGrowWithRestarts (a promhttp
//     scrape parsed by Prometheus's expfmt; 143 series, then 296).
//     5. start-duration buckets: the same test, against the bucket bounds
//     of docs/observability.md's example.
//     6. restarts without plugkit_plugin_version, describe launches making
//     series without one: the same test; the doc's example is what the
//     scrape shows. The process kept by Finder.KeepDescribed, started
//     before its version was known: TestKeptDescribeProcessSeriesCarryTheVersion
//     (8 series without the version, then 0); a plugin with no version
//     counted: TestUnversionedPluginIsCounted (0 starts, then 1).
//     7. one service for host and plugins: host's
//     TestPluginSpansCarryTheirOwnService, TestLaunchEnvPassesOTELAndTraceContext,
//     TestTraceReachesLaunchedPlugin; cmd/plugkit's TestDemo/trace.
//     8. orphan traces from inherited OTEL_*: host's
//     TestUntracedHostsPluginExportsNothing; plugin's
//     TestTracingFromEnvironment ("not asked" cases).
//     9. export errors per batch: host's TestExportErrorIsLoggedOnce (11
//     records, then 1); spans lost by a killed plugin: cmd/plugkit's
//     TestDemo/trace (11 of 25 calls without the plugin's span, then 0);
//     flushes on Close and SIGTERM: TestPluginFlushesSpansOnExit
//     (passed before: a guard); spans of an idle plugin lost to SIGKILL
//     over OTLP (the demo against a Collector: 11 of 25 calls without
//     the plugin's span, then 0): its subtest "SIGKILL when idle".
//     10. the collector set-ups of docs/observability.md:
//     TestPluginExportsOverOTLP runs them as written.
//   - the attacks of issue 38, each point with the tests that failed
//     before its fix:
//     6. a host that did not call sandbox.Init, whose re-executed binary
//     would run its main, the plugin unsandboxed: sandbox's
//     TestPrepareRefusesWithoutInit.
//   - the attacks of issue 39, each point with the tests that failed
//     before its fix:
//     1. discovery runs only plugins: a plugin that is group- or
//     world-writable, set-user-ID or set-group-ID, owned by another user
//     (or linked to such a file), or in a directory others may write
//     without the sticky bit, is refused before it runs: manager's
//     TestDiscoverRefusesUnsafeFiles; a directory like /bin whose ordinary
//     programs would write files if run: with Finder.Names none is
//     started, manager's TestDirsRunOnlyNamedPlugins; plugins list --dir
//     on such a directory runs none of them by default (--names
//     plugkit-*, or a Go program linking plugkit): cmd/plugkit's
//     TestPluginsListRunsNoOrdinaryProgram.
//     2. docs that send a newcomer wrong: a kind's module is started
//     offline as docs/your-own-kind.md says, examples/kvcheck's
//     TestYourOwnKindModuleSetup; the SDKs' READMEs build a kind's image
//     with the buf the tests run, sdk/sdktest's TestREADMEsNameTheBufThatRuns.
//     5. a silent wait: a matrix command's run of over two seconds (a
//     WebAssembly module's compile) says what it does first, conformance's
//     TestCommandSaysWhatItDoesWhenSlow.
//     7. a WebAssembly plugin handed a host path no grant covers: the
//     matrix grants modules a scratch directory where the suites make
//     their stores, objectstore-matrix's TestMatrixCommandWasm (every fs.wasm
//     case had failed: "mkdir /tmp: Bad file number");
//     TestMatrixWasmWithoutGrant (the error names the missing grant);
//     inspect and call run modules, granted only what --grant and
//     --grant-rw name: cmd/plugkit's TestInspectWasm, TestCallWasm.
//     8. tests that litter the user's /tmp: each guarded test binary runs
//     in a TMPDIR of its own and fails, naming them, when its tests leave
//     a file there or a process running (internal/testutil's Main;
//     TestLeftBehindNamesFilesLeft, TestLeftBehindNamesAndKillsProcessesLeft).
//     It failed first on cmd/plugkit (plugkit-cli-wasm-*: the fs.wasm
//     build), plugintest (plugintest-*: Run's socket directory kept on a
//     Security and TLSProvider mismatch) and sandbox (plugkit-sysctl-*:
//     the rootless tty host's os.Exit skipped its removal; and, under a
//     TMPDIR below /tmp, the root-mode plugin could not pass the 0700
//     parents of its socket directory's mount point). A command that
//     trims a compilation cache it shares (with a host, or with the tests'
//     runtimes at 4 GiB) to its own default of 2 GiB: --wasm-cache-bytes
//     sets its bound, cmd/plugkit's TestWasmCacheBytes (the flag did not
//     exist).
//   - the attacks of issue 40, each point with the tests that failed
//     before its fix:
//     1. signatures as referrers: release's TestPushSignsWithAReferrerBundle,
//     TestVerifyFindsCosignReferrers; TestVerifyRefusesHostileReferrers (a
//     referrer of another release, a bundle naming another release, a
//     bundle by no trusted key, a huge referrers list in one page or in
//     endless pages, a bundle over MaxSignatureBytes); a bundle that
//     go-containerregistry's tag-schema index lists by its config's type
//     (cosign v2 sign --new-bundle-format): TestVerifyFindsReferrersListedByConfigType.
//     2. co-signatures kept on push: TestRePushKeepsCoSignatures.
//     3. cosign's encrypted key file: TestLoadPrivateKeyReadsCosignsEncryptedKey.
//     11. oras pull of a whole release: TestPullOfAWholeReleaseWritesItsDirectory;
//     a copy with referrers carries the signature:
//     TestCopyWithReferrersCarriesTheSignature,
//     TestMirrorCarriesReferrerSignatures; a wrong password:
//     TestWrongPasswordSaysWhatToDo.
//   - the attacks of issue 41, each point with the tests that failed
//     before its fix:
//     1. a binary half written into a watched plugin directory is never
//     taken: Manager.Watch holds every change back while a file there is
//     open for writing (inotify), so no refresh describes or starts it:
//     manager's TestWatchDirWaitsForAFileToBeClosed; install's staging
//     file (a dot name) and the Finder's cache files are no change:
//     TestWatchDirSeesAnInstall.
//     2. a new release that lies in its Describe answer (claims a major
//     whose service it does not serve) is refused by a probe of each
//     service before any call moves to it: manager's
//     TestUpgradeRefusesALiar; one that no longer serves a major a Conn
//     speaks, or fails its pin: TestUpgradeRefusesAMissingMajor,
//     TestUpgradeRefusesAPinMismatch; a binary replaced after the new
//     release was described, before it starts, is not run under that
//     description (the SHA-256 it was described with is checked on the
//     open file it executes, without any pin):
//     TestUpgradeRunsOnlyTheDescribedFile.
//     3. (a leftover: a restart, not an upgrade) a plugin whose file was
//     replaced on disk, and whose process then ends (a crash, a kill, the
//     memory limit, a hang's kill), is not restarted from the file now
//     there: every start checks, on the open file it executes, the
//     SHA-256 its release was described with, and refuses a changed file
//     with EventRestartRefused: manager's
//     TestRestartRunsOnlyTheDescribedFile (with the file's modification
//     time restored, Refresh still takes the new file: the refusal drops
//     the describe cache's entry); the first start after Discover:
//     TestFirstStartRunsOnlyTheDescribedFile; a WebAssembly guest that
//     died at its memory limit, its module renamed over:
//     TestRestartRunsOnlyTheDescribedModule; the launch that describes a
//     file (and the process KeepDescribed keeps) runs the bytes hashed:
//     TestDescribeRunsOnlyTheHashedFile; an upgrade in place rolled back
//     after the old process died does not restart the old release from
//     the file rolled back: TestRollbackRunsOnlyTheDescribedFile.
//   - the attacks of issue 42 (a WebAssembly guest started from a snapshot
//     of its memory after its init), each with the test that failed before
//     its fix (package wasmhost):
//     1. another module's snapshot (a file replaced, same name, arguments
//     and environment): TestSnapshotKeyedByModule.
//     2. a snapshot taken with another environment or other arguments:
//     TestSnapshotKeyedByEnv (both); two lists that made one key:
//     TestSnapKeyApart.
//     3. an init that called the file system (a descriptor missing from a
//     guest started from its memory; a stat whose answer changed):
//     TestSnapshotNotAfterInitFileSystem.
//     4. snapshots past Config.SnapshotBytes: TestSnapshotBytes,
//     TestSnapshotsLimit.
//     5. a guest started from a snapshot that spins, past its CPU budget
//     (the host's garbage collector waited for it forever, every
//     goroutine stopped): TestSnapshotGuestStops, TestSpinningGuestLetsGCRun.
//     6. a guest started from a snapshot outside its directories or past
//     its memory limit: TestSnapshotGuestBounds; an init that never
//     returns: TestSnapshotInitNeverReturns.
//     7. a module whose data section is malformed (a segment kind wasm
//     lacks, a count past its segments, a segment cut short), read by the
//     host to make the data-less form snapshot starts use: no panic, and
//     a form kept has no data: FuzzWithoutData (its seeds run in make
//     test; added for the review, it passed on the code before, whose
//     reading it covers).
//   - found this session, each failed first: a module slow to compile
//     (past Config.CompileTimeout) and a Runtime closed soon after, whose
//     compile wrote to the store Close had released and panicked, ending
//     the host: wasmhost's TestCloseWaitsForAbandonedCompile; a guest that
//     spun in yamux's Stream.Read at its session's end (its one thread
//     never preempted) until Close stopped it: wasmhost's
//     TestCloseEndsGuestByItsOwnStop; a plugin killed by SIGPIPE writing
//     to its dead host's pipe, its socket directory left behind: interop's
//     TestPlugkitPluginOutlivesNoGoPluginHost under testutil.Tidy; a
//     plugin whose host died as Run began, which exited with the socket
//     directory Run had just made (the watch of the host decided to exit,
//     then Run claimed the stop): plugin's TestClaimWaitsForAnExitUnderWay;
//     an install whose describe failed with "text file busy" when a fork
//     in another goroutine held a copy of the staged binary's write
//     descriptor: release's TestInstallWaitsOutABusyBinary; a plugin
//     that replaced its socket directory's .owner with a link, which the
//     next host's sweep opened for reading and writing, following it:
//     host's TestSweepOpensNoPlantedLink; a plugin that wrote its line and
//     exited at once, refused as "exited before its handshake (exit
//     status 0)" when the host saw the exit before its stdout reader
//     handed the line over, which it waited 100 ms for (seen under load in
//     release's TestInstallWaitsForTheDirectoryLock): host's
//     TestHandshakeLineOutlivesTheExit; one that exited without its line
//     and left a child holding its stdout, reported as exited after at
//     most drainTimeout (1 s): TestHandshakeExitWithPipeHeld.
//   - many calls from many goroutines: TestManyCalls (20,000 calls from 100
//     goroutines; goroutines, open files and heap of the host, and the
//     plugin's open files, back to baseline); make soak runs
//     TestSoakManyCalls, a million calls from 1000 goroutines
//     (PLUGKIT_SOAK=1).
package faults
