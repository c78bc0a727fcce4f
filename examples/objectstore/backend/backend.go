package backend

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"sort"
	"strings"
	"sync"
)

// ErrNotFound reports a missing object.
var ErrNotFound = errors.New("no such object")

// Backend stores whole objects by key.
type Backend interface {
	// Init configures the backend.
	Init(config map[string]string) error
	Put(key string, data []byte) error
	Get(key string) ([]byte, error)
	List(prefix string) ([]string, error)
	Delete(key string) error
}

// Sum returns the hex SHA-256 of data.
func Sum(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

// Memory keeps objects in memory.
type Memory struct {
	mu      sync.RWMutex
	objects map[string][]byte
}

// NewMemory returns an empty in-memory backend.
func NewMemory() *Memory { return &Memory{objects: map[string][]byte{}} }

// Init accepts any configuration; there is nothing to configure.
func (m *Memory) Init(map[string]string) error { return nil }

// Put stores data under key.
func (m *Memory) Put(key string, data []byte) error {
	m.mu.Lock()
	m.objects[key] = data
	m.mu.Unlock()
	return nil
}

// Get returns the object under key.
func (m *Memory) Get(key string) ([]byte, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	data, ok := m.objects[key]
	if !ok {
		return nil, ErrNotFound
	}
	return data, nil
}

// List returns the sorted keys starting with prefix.
func (m *Memory) List(prefix string) ([]string, error) {
	m.mu.RLock()
	var keys []string
	for k := range m.objects {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	m.mu.RUnlock()
	sort.Strings(keys)
	return keys, nil
}

// Delete removes the object under key.
func (m *Memory) Delete(key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.objects[key]; !ok {
		return ErrNotFound
	}
	delete(m.objects, key)
	return nil
}
