// Command plugkit inspects, calls and checks go-plugin compatible gRPC plugins.
//
// Each subcommand lives in its own file of this package:
//
//	plugkit inspect PLUGIN ...       launch a plugin, negotiate, list its services
//	plugkit call PLUGIN ... S/M      call a method through server reflection
//	plugkit plugins list --dir DIR   list the plugin binaries in directories
//	plugkit plugins describe BIN     describe one plugin binary
//	plugkit compat --index FILE ...  find the plugin releases a host can use
//	plugkit release push DIR ...     publish and sign a plugin release (OCI); mirror, demo
//	plugkit install SOURCE --kind K  install a compatible, signed release
//	plugkit lock --lock FILE ...     lock releases' digests for more platforms
//	plugkit proto breaking IN ...    check protobuf files for breaking changes
//	plugkit proto history DIR        check a versioned protocol history
//	plugkit demo                     run the objectstore demo
//
// Run "plugkit help" for the list and "plugkit CMD -h" for a command's flags.
package main
