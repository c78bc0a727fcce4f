package filehash

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
)

// SHA256 returns the hex SHA-256 of everything r yields, or ctx's error
// once ctx has ended.
func SHA256(ctx context.Context, r io.Reader) (string, error) {
	h := sha256.New()
	if _, err := io.Copy(h, Reader(ctx, r)); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Reader returns a reader of r that fails with ctx's error once ctx has
// ended, asking before each Read.
func Reader(ctx context.Context, r io.Reader) io.Reader { return ctxReader{ctx, r} }

// ctxReader is a reader that fails once its context has ended.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
