// Package listen opens the sockets plugins and brokers serve on: a unix
// socket alone in a private directory, or a loopback TCP port in a range.
package listen
