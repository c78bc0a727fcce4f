package main

import (
	"bytes"
	"fmt"
	"go/format"
	"os"
	"path/filepath"
	"strings"
)

const (
	fileAnchor = "File: protoimpl.DescBuilder{\n"
	typeAnchor = "}.Build()\n"
	fileLine   = "FileRegistry: Files,\n"
	typeLine   = "TypeRegistry: Types,\n"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: privatize DIR (a directory of protoc-gen-go output)")
		os.Exit(2)
	}
	files, err := filepath.Glob(filepath.Join(os.Args[1], "*.pb.go"))
	if err != nil || len(files) == 0 {
		fmt.Fprintf(os.Stderr, "privatize: no *.pb.go files in %s: run buf generate first\n", os.Args[1])
		os.Exit(1)
	}
	for _, path := range files {
		if strings.HasSuffix(path, "_grpc.pb.go") {
			continue
		}
		if err := rewrite(path); err != nil {
			fmt.Fprintf(os.Stderr, "privatize: %v\n", err)
			os.Exit(1)
		}
	}
}

func rewrite(path string) error {
	src, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if bytes.Contains(src, []byte("FileRegistry:")) {
		return nil // already rewritten
	}
	out, err := insertAfter(src, fileAnchor, fileLine)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	out, err = insertBefore(out, typeAnchor, typeLine)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	out, err = format.Source(out)
	if err != nil {
		return fmt.Errorf("%s: formatting the result: %w", path, err)
	}
	return os.WriteFile(path, out, 0o644)
}

func insertAfter(src []byte, anchor, line string) ([]byte, error) {
	i := bytes.Index(src, []byte(anchor))
	if i < 0 || bytes.Count(src, []byte(anchor)) != 1 {
		return nil, fmt.Errorf("expected exactly one %q; has protoc-gen-go's output changed shape?", strings.TrimSpace(anchor))
	}
	i += len(anchor)
	return append(append(append([]byte{}, src[:i]...), line...), src[i:]...), nil
}

func insertBefore(src []byte, anchor, line string) ([]byte, error) {
	i := bytes.Index(src, []byte(anchor))
	if i < 0 || bytes.Count(src, []byte(anchor)) != 1 {
		return nil, fmt.Errorf("expected exactly one %q; has protoc-gen-go's output changed shape?", strings.TrimSpace(anchor))
	}
	return append(append(append([]byte{}, src[:i]...), line...), src[i:]...), nil
}
