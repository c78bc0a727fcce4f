// Command memory is an example plugin: an in-memory object store serving
// objectstore.v1.ObjectStore through plugkit as the implementation
// "example.com/memory" of kind "objectstore", major 1. Its host sets the
// cookie PLUGKIT_EXAMPLE_PLUGIN=objectstore and speaks app protocol
// version 1.
//
// Run by hand it says what it is; to look inside it:
//
//	plugkit inspect ./memory --cookie PLUGKIT_EXAMPLE_PLUGIN=objectstore --versions 1
package main
