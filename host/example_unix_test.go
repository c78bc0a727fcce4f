//go:build unix

package host_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"time"

	objectstorev1 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v1"
	"github.com/plugkit/plugkit/host"
)

// throughEnv is a host.Runner that launches a plugin through env(1),
// which executes the plugin in place, standing in for a container
// runtime, a jail or ssh.
type throughEnv struct{}

// Prepare puts env in front of the plugin's command.
func (throughEnv) Prepare(l *host.Launch) error {
	env, err := exec.LookPath("env")
	if err != nil {
		return err
	}
	l.Cmd.Args = append([]string{env, l.Cmd.Path}, l.Cmd.Args[1:]...)
	l.Cmd.Path = env
	return nil
}

// ExampleRunner launches a plugin through a runner of its own
// (throughEnv). Start still owns the process: its group, its death with
// the host, its stop on Close.
func ExampleRunner() {
	exe, _ := os.Executable()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	client, err := host.Start(ctx, host.Command{
		Path:   exe,
		Env:    []string{modeEnv + "=kv", "GORACE=atexit_sleep_ms=0"},
		Cookie: testCookie,
		Runner: throughEnv{},
	}, host.Options{Versions: []int{1}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()

	store := objectstorev1.NewObjectStoreClient(client.Conn())
	resp, err := store.Exists(ctx, &objectstorev1.ExistsRequest{Key: "yes-please"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("exists:", resp.GetExists())
	// Output:
	// exists: true
}
