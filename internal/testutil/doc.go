// Package testutil holds small helpers that plugkit's tests share.
package testutil
