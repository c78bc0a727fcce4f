package wasmhost_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"runtime"
	"testing"
	"time"

	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/wasmhost"
)

// Opcodes of the stop tests' modules.
const (
	opCall      = 0x10
	opGlobalSet = 0x24
	secGlobal   = 6
)

// spinModule is a _start that calls function 1, which spins in a loop
// for ever. The module declares globals mutable i32 globals; when set is
// 0 or more, the loop sets global set (its own when set < globals).
func spinModule(globals, set int) []byte {
	return spinModuleMemory(globals, set, false)
}

// spinModuleMemory is spinModule, with a memory of one page when memory.
func spinModuleMemory(globals, set int, memory bool) []byte {
	spin := []byte{opLoop, voidBlock}
	if set >= 0 {
		spin = cat(spin, []byte{opI32Const, 1, opGlobalSet}, uleb(uint64(set)))
	}
	spin = cat(spin, []byte{opBr, 0, opEnd, opEnd})
	var decls [][]byte
	for range globals {
		decls = append(decls, []byte{i32, 1, opI32Const, 0, opEnd})
	}
	sections := [][]byte{voidType, section(secFunction, vec(uleb(0), uleb(0)))}
	if memory {
		sections = append(sections, section(secMemory, vec([]byte{0, 1})))
	}
	if globals > 0 {
		sections = append(sections, section(secGlobal, vec(decls...)))
	}
	return module(append(sections, startExport,
		section(secCode, vec(body(nil, []byte{opCall, 1, opEnd}), body(nil, spin))))...)
}

// TestStopEndsComputingGuest: a guest that computes for ever (a loop
// with no call out of the guest) ends at Stop, compiled (the stop checks
// the Runtime adds at each loop) and interpreted (wazero's), with the
// module's own globals or none, and Err says why.
func TestStopEndsComputingGuest(t *testing.T) {
	for _, interpret := range []bool{false, true} {
		for _, globals := range []int{0, 2} {
			rt := wasmhost.New(wasmhost.Config{Interpret: interpret})
			defer rt.Close(context.Background())
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			g, err := rt.StartGuest(ctx, host.GuestSpec{Path: "spin.wasm", Module: spinModule(globals, globals-1), Stdout: os.Stdout, Stderr: os.Stderr})
			if err != nil {
				t.Fatalf("interpret %v, %d globals: %v", interpret, globals, err)
			}
			select {
			case <-g.Done():
				t.Fatalf("interpret %v, %d globals: the guest ended before Stop: %v", interpret, globals, g.Err())
			case <-time.After(200 * time.Millisecond): // it spins
			}
			cause := errors.New("stopped by the test")
			g.Stop(cause)
			select {
			case <-g.Done():
			case <-time.After(30 * time.Second):
				t.Fatalf("interpret %v, %d globals: the guest still computes 30 s after Stop", interpret, globals)
			}
			if !errors.Is(g.Err(), cause) {
				t.Errorf("interpret %v, %d globals: Err %v; want the Stop's cause", interpret, globals, g.Err())
			}
		}
	}
}

// TestGuestCannotClearStop: a module whose code sets the global past its
// own (the index the Runtime gives its stop global) is refused before it
// runs, so that it cannot clear the stop; setting its own globals is
// fine (TestStopEndsComputingGuest).
func TestGuestCannotClearStop(t *testing.T) {
	for _, globals := range []int{0, 2} {
		mod := spinModule(globals, globals)
		rt := wasmhost.New(wasmhost.Config{})
		err := rt.Compile(context.Background(), mod)
		rt.Close(context.Background())
		if err == nil {
			t.Fatalf("%d globals: a module that sets global %d compiled", globals, globals)
		}
		t.Logf("%d globals: %v", globals, err)
	}
}

// TestSpinningGuestLetsGCRun: Go's garbage collector stops every
// goroutine at times (stop the world), and cannot stop one inside a
// guest's machine code: a compiled guest that spins must leave it often
// enough, or the whole host process stands still for as long as it spins
// (forever: the goroutine that would stop it is stopped too). A process
// of its own (this test run again) spins guests, with a memory and
// without, collects garbage, stops them; this one gives it two minutes.
func TestSpinningGuestLetsGCRun(t *testing.T) {
	t.Parallel() // a child process of its own
	if os.Getenv(spinGCEnv) != "" {
		spinAndCollect(t)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestSpinningGuestLetsGCRun$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), spinGCEnv+"=1")
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("the process whose guests spin did not end within 2 minutes: its garbage collector waited for them (every goroutine stopped):\n%s", out)
	}
	if err != nil {
		t.Fatalf("the process whose guests spin: %v\n%s", err, out)
	}
}

// spinGCEnv makes TestSpinningGuestLetsGCRun the process that spins.
const spinGCEnv = "PLUGKIT_TEST_SPIN_GC"

// spinAndCollect starts two compiled guests that spin, collects garbage
// while they do, and stops them.
func spinAndCollect(t *testing.T) {
	rt := wasmhost.New(wasmhost.Config{})
	defer rt.Close(context.Background())
	var guests []host.Guest
	for _, memory := range []bool{false, true} {
		g, err := rt.StartGuest(context.Background(), host.GuestSpec{Path: "spin.wasm", Module: spinModuleMemory(0, -1, memory), Stdout: os.Stdout, Stderr: os.Stderr})
		if err != nil {
			t.Fatalf("memory %v: %v", memory, err)
		}
		guests = append(guests, g)
	}
	time.Sleep(200 * time.Millisecond) // they spin
	for range 3 {
		runtime.GC()
	}
	for _, g := range guests {
		select {
		case <-g.Done():
			t.Fatalf("a guest ended before Stop: %v", g.Err())
		default:
		}
		g.Stop(errors.New("stopped by the test"))
		<-g.Done()
	}
}
