// Package debugline writes and reads the line a plugin in debug mode
// prints (PLUGKIT_REATTACH='{...}', or Terraform's
// TF_REATTACH_PROVIDERS='{...}'): Quote makes its shell-quoted value for
// package plugin and tfserve, Parse and Only read it back for
// `plugkit inspect --reattach` and the tests that reattach.
package debugline
