//go:build !linux

package gen

import (
	"context"
	"errors"
	"fmt"
	"runtime"
)

// SendData needs Linux's AF_PACKET sockets (data_linux.go); elsewhere it refuses.
// DataFrames, which builds the frames, works everywhere.
func SendData(ctx context.Context, g *Generator, dc *DataConfig, sc SendConfig) (Stats, error) {
	return Stats{}, fmt.Errorf("gen: data packets go out through an AF_PACKET socket, which needs Linux; this is %s: %w", runtime.GOOS, errors.ErrUnsupported)
}
