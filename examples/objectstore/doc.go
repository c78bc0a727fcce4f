// Package objectstore is the host-side helper of the example "objectstore"
// plugin kind: it turns the streaming Put and Get of objectstore.v1 into
// calls that take and return whole byte slices, checking what was stored.
package objectstore
