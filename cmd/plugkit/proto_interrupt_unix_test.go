//go:build unix

package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestProtoInstallsNoInterruptHandler: "plugkit proto" starts no plugins,
// so the CLI installs no interrupt handler for it (the handler costs a
// goroutine and an OS thread at every start, and the command runs once
// per pair of releases in CI). Interrupted, it stops as plugkit-proto and
// any Go program do: killed by the signal, where the handler would exit
// with status 130. The command is held reading its --config from a FIFO,
// as from a shell's <(...), while the signal is sent.
func TestProtoInstallsNoInterruptHandler(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cli := goBuild(t, dir, "plugkit", ".")
	writeProto(t, filepath.Join(dir, "in", "a.proto"), "syntax = \"proto3\";\npackage a;\n")
	fifo := filepath.Join(dir, "config")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(dir, "in")
	cmd := exec.Command(cli, "proto", "breaking", in, "--against", in, "--config", fifo)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		cmd.Process.Kill()
		<-done
	}()

	// Opening the FIFO's write end without blocking succeeds once the
	// CLI has it open for reading: from then on it waits for the config.
	var w *os.File
	for deadline := time.Now().Add(time.Minute); w == nil; {
		f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		switch {
		case err == nil:
			w = f
		case !errors.Is(err, syscall.ENXIO):
			t.Fatal(err)
		case time.Now().After(deadline):
			t.Fatalf("the CLI never opened its --config; stderr %s", stderr.String())
		default:
			select {
			case err := <-done:
				done <- err
				t.Fatalf("the CLI exited before reading its --config: %v; stderr %s", err, stderr.String())
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	defer w.Close()

	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		done <- err
	case <-time.After(time.Minute):
		t.Fatal("the CLI did not stop within a minute of SIGINT")
	}
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGINT {
		t.Errorf("plugkit proto after SIGINT: %v (exit %d), want killed by SIGINT as plugkit-proto is: an interrupt handler runs on the proto path; stderr %s",
			cmd.ProcessState, cmd.ProcessState.ExitCode(), stderr.String())
	}
}
