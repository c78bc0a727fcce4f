package handshake

import (
	"fmt"
	"strconv"
	"strings"
)

// The environment variables of the contract. A host sets them on the
// plugin process, after its own environment.
const (
	EnvMinPort          = "PLUGIN_MIN_PORT"
	EnvMaxPort          = "PLUGIN_MAX_PORT"
	EnvProtocolVersions = "PLUGIN_PROTOCOL_VERSIONS"
	EnvClientCert       = "PLUGIN_CLIENT_CERT"
	EnvUnixSocketDir    = "PLUGIN_UNIX_SOCKET_DIR"
	EnvUnixSocketGroup  = "PLUGIN_UNIX_SOCKET_GROUP"
	EnvMultiplexGRPC    = "PLUGIN_MULTIPLEX_GRPC"
	// EnvNetwork is plugkit's own: a host sets it to "tcp" to ask for a TCP
	// listener instead of a unix socket. go-plugin plugins ignore it.
	EnvNetwork = "PLUGKIT_NETWORK"
	// EnvListen and the three TLS variables make a plugin a long-lived
	// network service (see package plugin); EnvInsecureLoopback=1 lets
	// such a service on a loopback address go without TLS. A host never
	// passes them on to the plugins it launches.
	EnvListen           = "PLUGKIT_LISTEN"
	EnvTLSCert          = "PLUGKIT_TLS_CERT"
	EnvTLSKey           = "PLUGKIT_TLS_KEY"
	EnvTLSClientCA      = "PLUGKIT_TLS_CLIENT_CA"
	EnvInsecureLoopback = "PLUGKIT_INSECURE_LOOPBACK"
)

// Variables lists every variable of the contract (the cookie's key aside):
// a host removes them from the environment it passes on, so that a host
// that is itself a plugin does not hand its own handshake to its plugins,
// and sets those it means.
var Variables = []string{EnvMinPort, EnvMaxPort, EnvProtocolVersions, EnvClientCert, EnvUnixSocketDir,
	EnvUnixSocketGroup, EnvMultiplexGRPC, EnvNetwork, EnvDescribe, EnvListen, EnvTLSCert, EnvTLSKey, EnvTLSClientCA, EnvInsecureLoopback}

// Default port range, as go-plugin's host uses.
const (
	DefaultMinPort = 10000
	DefaultMaxPort = 25000
)

// Cookie is the magic cookie: a key and value a host puts in the plugin's
// environment. It is not security. It tells a plugin binary that it was
// launched by a host, not by a person at a shell.
type Cookie struct {
	Key   string
	Value string
}

// Validate reports a cookie that cannot be used.
func (c Cookie) Validate() error {
	if c.Key == "" || c.Value == "" {
		return fmt.Errorf("magic cookie needs both a key and a value (got key %q)", c.Key)
	}
	if strings.ContainsAny(c.Key, "=\x00") {
		return fmt.Errorf("magic cookie key %q must not contain '=' or NUL", c.Key)
	}
	return nil
}

// ParseCookie reads a cookie written as KEY=VALUE.
func ParseCookie(s string) (Cookie, error) {
	k, v, ok := strings.Cut(s, "=")
	c := Cookie{Key: k, Value: v}
	if !ok {
		return c, fmt.Errorf("cookie %q: write it as KEY=VALUE", s)
	}
	return c, c.Validate()
}

// Env is what a host tells a plugin through its environment.
type Env struct {
	Cookie Cookie
	// Versions are the app protocol versions the host speaks.
	Versions []int
	// MinPort and MaxPort bound a TCP listener's port. Zero means the
	// go-plugin defaults.
	MinPort, MaxPort int
	// ClientCert is the host's AutoMTLS certificate (PEM); empty turns
	// AutoMTLS off.
	ClientCert []byte
	// UnixSocketDir is where the plugin should create its socket; empty
	// means the temporary directory.
	UnixSocketDir string
	// UnixSocketGroup, when set, is the group (name or id) that should own
	// the socket, which is then made group-writable.
	UnixSocketGroup string
	// Multiplex is set when the host asks for broker multiplexing
	// (PLUGIN_MULTIPLEX_GRPC=true, or another true value of
	// strconv.ParseBool): the plugin then carries brokered connections over
	// its one connection and says so in the handshake's 7th field.
	Multiplex bool
	// Network is "tcp" when the host asks for TCP; empty means unix.
	Network string
	// Describe is set when the host asks only for the plugin's
	// description (EnvDescribe=1).
	Describe bool
}

// Environ returns the variables in KEY=VALUE form, for exec.Cmd.Env.
func (e Env) Environ() []string {
	minPort, maxPort := e.MinPort, e.MaxPort
	if minPort == 0 {
		minPort = DefaultMinPort
	}
	if maxPort == 0 {
		maxPort = DefaultMaxPort
	}
	env := []string{
		e.Cookie.Key + "=" + e.Cookie.Value,
		EnvMinPort + "=" + strconv.Itoa(minPort),
		EnvMaxPort + "=" + strconv.Itoa(maxPort),
		EnvProtocolVersions + "=" + joinVersions(e.Versions),
	}
	if len(e.ClientCert) > 0 {
		env = append(env, EnvClientCert+"="+string(e.ClientCert))
	}
	if e.UnixSocketDir != "" {
		env = append(env, EnvUnixSocketDir+"="+e.UnixSocketDir)
	}
	if e.UnixSocketGroup != "" {
		env = append(env, EnvUnixSocketGroup+"="+e.UnixSocketGroup)
	}
	if e.Multiplex {
		env = append(env, EnvMultiplexGRPC+"=true")
	}
	if e.Network != "" {
		env = append(env, EnvNetwork+"="+e.Network)
	}
	if e.Describe {
		env = append(env, EnvDescribe+"=1")
	}
	return env
}

// CookieError reports a plugin started without the right magic cookie,
// most often a person running the plugin binary by hand.
type CookieError struct {
	Key string
}

// Error explains to a person that the binary is a plugin.
func (e *CookieError) Error() string {
	return fmt.Sprintf("this binary is a plugin: it is not meant to be run by hand. "+
		"Its host program starts it when it needs it (the host sets %s). "+
		"To look inside it, run: plugkit inspect PATH --cookie %s=VALUE", e.Key, e.Key)
}

// ReadEnv reads the contract on the plugin side. lookup is os.LookupEnv
// or a stand-in. The cookie must match want exactly.
func ReadEnv(lookup func(string) (string, bool), want Cookie) (Env, error) {
	if err := want.Validate(); err != nil {
		return Env{}, err
	}
	var e Env
	if v, ok := lookup(want.Key); !ok || v != want.Value {
		return e, &CookieError{Key: want.Key}
	}
	e.Cookie = want
	if v, ok := lookup(EnvProtocolVersions); ok {
		vs, err := ParseVersions(v)
		if err != nil {
			return e, fmt.Errorf("%s: %w", EnvProtocolVersions, err)
		}
		e.Versions = vs
	}
	var err error
	if e.MinPort, err = portEnv(lookup, EnvMinPort, DefaultMinPort); err != nil {
		return e, err
	}
	if e.MaxPort, err = portEnv(lookup, EnvMaxPort, DefaultMaxPort); err != nil {
		return e, err
	}
	if e.MinPort > e.MaxPort {
		return e, fmt.Errorf("%s=%d is above %s=%d; the port range is empty", EnvMinPort, e.MinPort, EnvMaxPort, e.MaxPort)
	}
	if v, ok := lookup(EnvClientCert); ok && v != "" {
		e.ClientCert = []byte(v)
	}
	e.UnixSocketDir, _ = lookup(EnvUnixSocketDir)
	e.UnixSocketGroup, _ = lookup(EnvUnixSocketGroup)
	if v, ok := lookup(EnvMultiplexGRPC); ok {
		e.Multiplex, _ = strconv.ParseBool(v)
	}
	if v, _ := lookup(EnvNetwork); v != "" {
		if v != "unix" && v != "tcp" {
			return e, fmt.Errorf("%s=%q: want unix or tcp", EnvNetwork, v)
		}
		e.Network = v
	}
	v, _ := lookup(EnvDescribe)
	e.Describe = v == "1"
	return e, nil
}

func portEnv(lookup func(string) (string, bool), key string, def int) (int, error) {
	v, ok := lookup(key)
	if !ok || v == "" {
		return def, nil
	}
	p, err := strconv.Atoi(v)
	if err != nil || p < 0 || p > 65535 {
		return 0, fmt.Errorf("%s=%q is not a port number (0-65535)", key, v)
	}
	return p, nil
}
