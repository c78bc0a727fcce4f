package earlykey

import (
	"os"
	"sync"

	"github.com/plugkit/plugkit/automtls"
	"github.com/plugkit/plugkit/handshake"
)

// early is the identity the init goroutine makes, nil when it made none.
var early struct {
	sync.Mutex
	done  chan struct{} // closed when id and err are set; nil: none begun
	id    *automtls.Identity
	err   error
	taken bool
}

func init() {
	if os.Getenv(handshake.EnvClientCert) == "" {
		return // no AutoMTLS asked for: no key pair to make ahead
	}
	start()
}

// start begins making the identity in the background.
func start() {
	done := make(chan struct{})
	early.done = done
	go func() {
		id, err := automtls.New()
		early.Lock()
		early.id, early.err = id, err
		early.Unlock()
		close(done)
	}()
}

// Identity returns a fresh AutoMTLS identity: the one made ahead the first
// time, when there is one, and a new one (automtls.New) otherwise. Each
// identity is handed out once.
func Identity() (*automtls.Identity, error) {
	early.Lock()
	done, taken := early.done, early.taken
	early.taken = true
	early.Unlock()
	if done == nil || taken {
		return automtls.New()
	}
	<-done
	early.Lock()
	defer early.Unlock()
	return early.id, early.err
}
