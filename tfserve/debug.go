package tfserve

import (
	"fmt"
	"io"

	"github.com/plugkit/plugkit/handshake"
	"github.com/plugkit/plugkit/internal/debugline"
)

// EnvReattachProviders is the variable through which Terraform and
// OpenTofu reattach to providers that are already running.
const EnvReattachProviders = "TF_REATTACH_PROVIDERS"

// DebugAnnounce writes where a provider in debug mode serves, laid out as
// terraform-plugin-go's debug mode lays it out, so that scripts and
// editors that read that output read this one: a sentence, a blank line,
// the tab-indented line TF_REATTACH_PROVIDERS='{...}' (the JSON quoted
// for a POSIX shell) and a blank line.
func DebugAnnounce(w io.Writer, name string, r handshake.Reattach) error {
	text, err := handshake.ReattachJSON(name, r)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "Provider %s is serving in debug mode. To use it from Terraform or OpenTofu, set %s in their environment:\n\n\t%s=%s\n\n",
		name, EnvReattachProviders, EnvReattachProviders, debugline.Quote(text))
	return err
}
