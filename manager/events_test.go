package manager_test

import (
	"testing"

	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/manager"
)

// TestManagerEventsAreTheHosts: the manager's events are host events the
// host names, logs and tells OnEvent of, distinct from the host's own.
func TestManagerEventsAreTheHosts(t *testing.T) {
	t.Parallel()
	own := []host.EventType{host.EventStarted, host.EventReady, host.EventExited, host.EventCrashed, host.EventPinRefused}
	for typ, name := range map[host.EventType]string{manager.EventRestarted: "restarted", manager.EventHung: "hung", manager.EventGaveUp: "gave up",
		manager.EventUpgradeStarted: "upgrade started", manager.EventUpgradeSwitched: "upgrade switched", manager.EventUpgradeCompleted: "upgrade completed",
		manager.EventUpgradeRolledBack: "upgrade rolled back", manager.EventUpgradeRefused: "upgrade refused",
		manager.EventRestartRefused: "restart refused"} {
		if got := typ.String(); got != name {
			t.Errorf("event %d is %q, want %q", typ, got, name)
		}
		for _, o := range own {
			if typ == o {
				t.Errorf("manager's event %q has the number of the host's %q", name, o)
			}
		}
	}
}
