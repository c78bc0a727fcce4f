package main

// notes explains, for figures whose goal a run misses, what bounds them;
// a key ending in "*" covers every figure with that prefix. They are
// written from profiles (see BENCHMARKS.md) and printed only for misses.
var notes = map[string]string{}

// about describes every figure.
var about = []string{}
