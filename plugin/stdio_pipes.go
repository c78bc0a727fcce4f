//go:build !wasip1

package plugin

import (
	"os"

	"github.com/plugkit/plugkit/internal/goplugin/pluginpb"
)

// capture points os.Stdout and os.Stderr at pipes read by the server. The
// returned function puts them back.
func (s *stdioServer) capture() (restore func(), err error) {
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, err
	}
	oldOut, oldErr := os.Stdout, os.Stderr
	os.Stdout, os.Stderr = outW, errW
	s.readers.Add(2)
	go s.pump(outR, pluginpb.StdioData_STDOUT)
	go s.pump(errR, pluginpb.StdioData_STDERR)
	return func() {
		os.Stdout, os.Stderr = oldOut, oldErr
		outW.Close()
		errW.Close()
		s.readers.Wait()
	}, nil
}
