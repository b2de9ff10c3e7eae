//go:build wasip1

package weir

import "unsafe"

// adapterArena is memory the WASI preview1 adapter gets for its stack and
// state (2 x 64 KiB). The adapter allocates through the main module's
// `cabi_realloc` during Go's `_initialize`, before the Go runtime can run
// Go code, so that `cabi_realloc` is a small non-Go bump allocator added
// after linking (by `weir build`) over this array, which it
// finds by the magic prefix below. Go code never touches the array.
var adapterArena = [192 << 10]byte{'w', 'e', 'i', 'r', '-', 'a', 'd', 'a', 'p', 't', 'e', 'r', '-', 'a', 'r', 'e', 'n', 'a', '-', 'v', '1', 0xff}

// AdapterArenaAddr keeps adapterArena linked in.
var AdapterArenaAddr = uintptr(unsafe.Pointer(&adapterArena[0]))

func init() {
	if AdapterArenaAddr == 0 { // keeps the arena reachable for the linker
		panic("weir: no adapter arena")
	}
}
