//go:build wasip1

// Command fsguest is the file system probe of package wasmhost's tests,
// built with GOOS=wasip1 GOARCH=wasm. Each argument is one operation,
// run in order; for each it prints one line, the operation then "ok"
// (and what it read or listed) or "err" and the errno's name:
//
//	read:PATH            os.ReadFile
//	write:PATH           os.WriteFile ("guest was here")
//	append:PATH          open with O_APPEND|O_CREATE|O_WRONLY and write
//	list:PATH            os.ReadDir (the names, comma-separated)
//	mkdir:PATH           os.Mkdir
//	remove:PATH          os.Remove
//	stat:PATH            os.Stat
//	lstat:PATH           os.Lstat
//	readlink:PATH        os.Readlink
//	chmod:PATH           os.Chmod 0o777
//	chtimes:PATH         os.Chtimes to the epoch
//	truncate:PATH        os.Truncate to 0
//	symlink:TARGET=LINK  os.Symlink
//	link:OLD=NEW         os.Link
//	rename:OLD=NEW       os.Rename
//	readn:N=PATH         os.ReadFile N times: the distinct contents read
package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"
	"syscall"
	"time"
)

func main() {
	for _, op := range os.Args[1:] {
		out, err := run(op)
		if err != nil {
			fmt.Printf("%s err %s\n", op, errnoName(err))
			continue
		}
		fmt.Printf("%s ok %s\n", op, out)
	}
}

func run(op string) (string, error) {
	verb, arg, _ := strings.Cut(op, ":")
	a, b, _ := strings.Cut(arg, "=")
	switch verb {
	case "read":
		data, err := os.ReadFile(arg)
		return fmt.Sprintf("%q", data), err
	case "write":
		return "", os.WriteFile(arg, []byte("guest was here"), 0o644)
	case "append":
		f, err := os.OpenFile(arg, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return "", err
		}
		defer f.Close()
		_, err = f.WriteString("guest was here")
		return "", err
	case "list":
		ents, err := os.ReadDir(arg)
		names := make([]string, len(ents))
		for i, e := range ents {
			names[i] = e.Name()
		}
		return strings.Join(names, ","), err
	case "mkdir":
		return "", os.Mkdir(arg, 0o755)
	case "remove":
		return "", os.Remove(arg)
	case "stat":
		fi, err := os.Stat(arg)
		if err != nil {
			return "", err
		}
		return fi.Mode().String(), nil
	case "lstat":
		fi, err := os.Lstat(arg)
		if err != nil {
			return "", err
		}
		return fi.Mode().String(), nil
	case "readlink":
		return os.Readlink(arg)
	case "chmod":
		return "", os.Chmod(arg, 0o777)
	case "chtimes":
		return "", os.Chtimes(arg, time.Unix(0, 0), time.Unix(0, 0))
	case "truncate":
		return "", os.Truncate(arg, 0)
	case "symlink":
		return "", os.Symlink(a, b)
	case "link":
		return "", os.Link(a, b)
	case "rename":
		return "", os.Rename(a, b)
	case "readn":
		var n int
		fmt.Sscan(a, &n)
		seen := map[string]bool{}
		for range n {
			if data, err := os.ReadFile(b); err == nil {
				seen[fmt.Sprintf("%q", data)] = true
			}
		}
		contents := make([]string, 0, len(seen))
		for c := range seen {
			contents = append(contents, c)
		}
		sort.Strings(contents)
		return strings.Join(contents, ","), nil
	}
	return "", errors.New("unknown operation")
}

// errnoName is the errno err carries, by name, or its text when it
// carries none.
func errnoName(err error) string {
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		if errors.Is(err, fs.ErrNotExist) {
			return "ENOENT"
		}
		return strings.ReplaceAll(err.Error(), " ", "_")
	}
	for _, e := range []struct {
		errno syscall.Errno
		name  string
	}{
		{syscall.EPERM, "EPERM"}, {syscall.EACCES, "EACCES"}, {syscall.ENOENT, "ENOENT"},
		{syscall.EXDEV, "EXDEV"}, {syscall.EROFS, "EROFS"}, {syscall.ELOOP, "ELOOP"},
		{syscall.EBADF, "EBADF"}, {syscall.ENOTDIR, "ENOTDIR"}, {syscall.EISDIR, "EISDIR"},
		{syscall.EEXIST, "EEXIST"}, {syscall.ENOSYS, "ENOSYS"}, {syscall.ENOTEMPTY, "ENOTEMPTY"},
		{syscall.EINVAL, "EINVAL"}, {syscall.ENOTCAPABLE, "ENOTCAPABLE"},
	} {
		if errno == e.errno {
			return e.name
		}
	}
	return fmt.Sprintf("errno%d", uint32(errno))
}
