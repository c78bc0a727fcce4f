package manager

import (
	"context"
	"fmt"
	"time"

	"github.com/plugkit/plugkit/describe"
	"github.com/plugkit/plugkit/host"
)

// Attach registers an already-connected catalog plugin, such as one a test
// serves inside its own process (package plugintest), under every
// (kind, name) its Describe answers, as if a source had found it with
// Path label and Origin OriginAttached. Dispense (and a kind's typed
// Open) then use c for those names; c is never restarted, and Close
// closes it. An attached name takes precedence over those of
// Config.Sources, and stays registered across later Discovers.
func (m *Manager) Attach(ctx context.Context, label string, c *host.Client) error {
	if label == "" {
		return fmt.Errorf("manager: Attach: the label is empty: name the attached plugin (it stands for its path in errors)")
	}
	m.mu.Lock()
	closed := m.closed
	m.mu.Unlock()
	if closed {
		return ErrClosed
	}
	d, err := describe.Conn(ctx, c.Conn())
	if err != nil {
		return fmt.Errorf("manager: Attach %s: %w (is it a catalog plugin?)", label, err)
	}
	b := &found{Entry: Entry{Location: Location{Origin: OriginAttached, Path: label}, Description: d}, src: attachedSource{}}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	key := procKey{OriginAttached, label}
	if _, dup := m.procs[key]; dup {
		return fmt.Errorf("manager: Attach: %s is already in use: give each attached plugin its own label", label)
	}
	if m.attached == nil {
		m.attached = map[regKey]*entry{}
	}
	for _, k := range mergeKinds(d.GetKinds()) {
		for _, maj := range k.GetMajors() {
			for _, n := range maj.GetNames() {
				m.attached[regKey{k.GetName(), n}] = &entry{binary: b, kind: k}
			}
		}
	}
	p := newProcess(m, *b)
	p.cur, p.gen, p.started = newInstance(*b, c, 1), 1, time.Now()
	m.procs[key] = p
	m.addAttachedLocked()
	return nil
}

// addAttachedLocked puts the attached names into the registry. m.mu is
// held.
func (m *Manager) addAttachedLocked() {
	if len(m.attached) == 0 {
		return
	}
	if m.registry == nil {
		m.registry = map[regKey]*entry{}
	}
	for k, e := range m.attached {
		m.registry[k] = e
	}
}
