// Package brokerwire is the part of package broker that only the two ends
// of a plugin connection use: building a broker, running it on the broker
// stream, serving that stream on the plugin's side, and multiplexing every
// connection over one socket. A plugin author and a host user never call
// these; they get a ready *broker.Broker from plugin.Register or
// host.Client.Broker.
//
// The implementation stays in package broker, beside the limits and errors
// it documents; broker hands its constructors to this package in its init
// (the pattern grpc-go uses for its internal hooks). A program that uses
// this package therefore imports broker too, as host and plugin do.
package brokerwire
