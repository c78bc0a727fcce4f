// Package protocheck checks protobuf schemas for breaking changes.
package protocheck
