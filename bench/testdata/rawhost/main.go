// Command rawhost is pkhost with no plugin library: it starts rawserver
// (the echo service on bare grpc-go, over a unix socket, with mutual TLS
// from a fresh P-256 key pair on each side, as AutoMTLS makes them),
// dials it with grpc-go, makes one call, lets both sides idle and prints
// "HOST_KIB SERVER_KIB", the resident set sizes of itself and of the
// server. It is the baseline of the plugin's idle memory.
package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/plugkit/plugkit/automtls"
	"github.com/plugkit/plugkit/bench/internal/echo"
	"github.com/plugkit/plugkit/bench/internal/rss"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id, err := automtls.New()
	if err != nil {
		fail(err)
	}
	cmd := exec.CommandContext(ctx, os.Args[1])
	cmd.Env = append(os.Environ(), "BENCH_CLIENT_CERT="+string(id.PEM()))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		fail(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		fail(err)
	}
	if err := cmd.Start(); err != nil {
		fail(err)
	}
	defer func() { stdin.Close(); cmd.Wait() }()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		fail(fmt.Errorf("reading the server's address: %w", err))
	}
	addr, certB64, _ := strings.Cut(strings.TrimSpace(line), "|")
	der, err := base64.RawStdEncoding.DecodeString(certB64)
	if err != nil {
		fail(err)
	}
	cert, err := automtls.ParseDER(der)
	if err != nil {
		fail(err)
	}
	conn, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithTransportCredentials(credentials.NewTLS(id.Config(cert))),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", addr)
		}))
	if err != nil {
		fail(err)
	}
	defer conn.Close()
	if _, err := echo.Echo(ctx, conn, []byte("hello")); err != nil {
		fail(err)
	}
	time.Sleep(rss.Idle)
	fmt.Println(rss.Of(os.Getpid()), rss.Of(cmd.Process.Pid))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "rawhost:", err)
	os.Exit(1)
}
