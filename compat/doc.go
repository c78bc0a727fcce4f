// Package compat finds which releases of a plugin a host can use, from
// release manifests, and words the answer the way Terraform does when a
// provider release is incompatible: it names the latest (or earliest)
// compatible release and the version constraint that selects it.
//
// A release manifest has the Terraform registry's shape, extended with
// plugin kinds:
//
//	{"version": 1, "metadata": {
//	    "protocol_versions": ["6.0"],
//	    "kinds": {"objectstore": ["2.1", "1.0"]}}}
//
// An index lists the releases of each plugin:
//
//	{"plugins": {"example.com/fs": [
//	    {"version": "2.1.0", "manifest": {...}},
//	    {"version": "1.4.0", "manifest": {...}}]}}
package compat
