package plugin

import "io"

// Harness is what RunIn replaces of the process around one plugin, to run
// it inside another program, such as a test with its host in the same
// process (package plugintest does). The zero value replaces nothing: Run
// is RunIn with the zero Harness, a real plugin's behaviour.
type Harness struct {
	// LookupEnv reads the environment the host set; nil means
	// os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// Handshake receives the handshake line; nil means standard output.
	// A service (EnvListen) prints no handshake; it writes the address it
	// listens on here, when set, as one line.
	Handshake io.Writer
	// KeepStdio leaves os.Stdout and os.Stderr alone. Otherwise, after the
	// handshake, they are redirected to the GRPCStdio stream, as go-plugin
	// does, so that stray prints cannot corrupt the protocol.
	KeepStdio bool
	// NoParentWatch turns off stopping when the parent process dies.
	NoParentWatch bool
	// exits says the process ends as soon as Run returns (Serve): a stop
	// asked for by an idle host then leaves the server's connections to
	// the exit (see hosted.wait).
	exits bool
}
