// Package catalog is the plugin side of plugin kinds: a plugin binary
// registers implementations, each a (kind, major, name) triple with the
// gRPC service of that major, its minor version and its capabilities, and
// serves them together with the plugkit.catalog.v1.Catalog service that
// describes them.
//
// A kind is a plugin API, such as "objectstore". Each major version of a
// kind is its own protobuf package and gRPC service (objectstore.v1,
// objectstore.v2), so one binary can serve several majors at once. Minor
// versions only add, and are detected by capabilities, not negotiated.
// One binary may also serve several named implementations of the same
// kind and major; calls reach the right one by the gRPC metadata key
// "plugkit-name" (wire.NameKey), which the host's manager sets, so user
// messages carry no routing field.
//
//	cat, err := catalog.New("1.2.0",
//		catalog.Implement[objectstorev2.ObjectStoreServer]("objectstore", 2, 1, "example.com/fs",
//			&objectstorev2.ObjectStore_ServiceDesc, fsStore, "presign"),
//		catalog.Implement[objectstorev1.ObjectStoreServer]("objectstore", 1, 0, "example.com/fs",
//			&objectstorev1.ObjectStore_ServiceDesc, fsStoreV1),
//	)
//	...
//	catalog.Serve(cookie, cat)
package catalog
