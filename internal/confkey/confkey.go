// Package confkey is the configuration error at one key, on the floor so that the packages
// that validate their own section (ingest's listeners) and package config, which imports
// them and parses the file, make the same error. config re-exports it as config.Error.
package confkey

import "fmt"

// Error is a configuration error at one key.
type Error struct {
	Key   string // dotted path, e.g. "listeners[1].port"
	Value string // the offending value as written ("" when the key itself is the problem)
	Msg   string // what is allowed
}

func (e *Error) Error() string {
	if e.Value == "" {
		return e.Key + ": " + e.Msg
	}
	return e.Key + ": " + e.Value + ": " + e.Msg
}

// At returns an *Error at key for value, its message formatted.
func At(key string, value any, format string, args ...any) error {
	return &Error{Key: key, Value: fmt.Sprint(value), Msg: fmt.Sprintf(format, args...)}
}
