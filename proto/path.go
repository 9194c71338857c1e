package proto

import (
	"errors"
	"fmt"
	"unicode/utf16"
)

// ErrInvalidPath is wrapped by every error of ValidatePath.
var ErrInvalidPath = errors.New("invalid path")

// ValidatePath checks a znode path exactly as ZooKeeper's PathUtils does:
// absolute, no trailing or doubled slash, no "." or ".." segment, and none of
// the characters ZooKeeper refuses (controls, U+007F..U+009F, U+D800..U+F8FF,
// U+FFF0..U+FFFF). ZooKeeper looks at UTF-16 code units, so a character
// outside the basic plane, being a surrogate pair, is refused too, and so is
// invalid UTF-8, which Java decodes to U+FFFD.
func ValidatePath(path string) error {
	if len(path) == 0 {
		return fmt.Errorf("%w: path length must be > 0", ErrInvalidPath)
	}
	if path[0] != '/' {
		return fmt.Errorf("%w %q: path must start with / character", ErrInvalidPath, path)
	}
	if len(path) == 1 {
		return nil
	}
	if path[len(path)-1] == '/' {
		return fmt.Errorf("%w %q: path must not end with / character", ErrInvalidPath, path)
	}
	segStart := 1
	prev := '/'
	for i, c := range path {
		if i == 0 {
			continue
		}
		switch {
		case c == 0:
			return fmt.Errorf("%w %q: null character not allowed @%d", ErrInvalidPath, path, i)
		case c == '/' && prev == '/':
			return fmt.Errorf("%w %q: empty node name specified @%d", ErrInvalidPath, path, i)
		case invalidPathRune(c):
			return fmt.Errorf("%w %q: invalid character @%d", ErrInvalidPath, path, i)
		}
		if c == '/' {
			if seg := path[segStart:i]; seg == "." || seg == ".." {
				return fmt.Errorf("%w %q: relative paths not allowed @%d", ErrInvalidPath, path, i-1)
			}
			segStart = i + 1
		}
		prev = c
	}
	if seg := path[segStart:]; seg == "." || seg == ".." {
		return fmt.Errorf("%w %q: relative paths not allowed @%d", ErrInvalidPath, path, len(path)-1)
	}
	return nil
}

func invalidPathRune(c rune) bool {
	return (c > 0 && c <= 0x1f) ||
		(c >= 0x7f && c <= 0x9f) ||
		(c >= 0xd800 && c <= 0xf8ff) ||
		(c >= 0xfff0 && c <= 0xffff) ||
		utf16.IsSurrogate(c) || c > 0xffff
}

// Parent returns the parent of a valid path other than "/".
func Parent(path string) string {
	for i := len(path) - 1; i >= 0; i-- {
		if path[i] == '/' {
			if i == 0 {
				return "/"
			}
			return path[:i]
		}
	}
	return "/"
}

// Base returns the last name of a valid path; "" for "/".
func Base(path string) string {
	for i := len(path) - 1; i >= 0; i-- {
		if path[i] == '/' {
			return path[i+1:]
		}
	}
	return path
}

// Join returns parent + "/" + name for a valid parent.
func Join(parent, name string) string {
	if parent == "/" {
		return "/" + name
	}
	return parent + "/" + name
}
