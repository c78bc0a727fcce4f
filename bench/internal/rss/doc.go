// Package rss reads the resident set size of a process from /proc.
package rss
