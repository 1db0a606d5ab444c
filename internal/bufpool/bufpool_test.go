package bufpool

import "testing"

func TestGetPutReuses(t *testing.T) {
	b := Get(100 << 10)
	if len(b) != 100<<10 || cap(b) != 128<<10 {
		t.Fatalf("len %d cap %d", len(b), cap(b))
	}
	b[0] = 7
	Put(b)
	// sync.Pool may drop items at any GC; a reuse is likely, not certain,
	// so only the invariants are checked.
	c := Get(90 << 10)
	if len(c) != 90<<10 || cap(c) != 128<<10 {
		t.Fatalf("len %d cap %d", len(c), cap(c))
	}
	Put(make([]byte, 100<<10)) // not from Get: ignored, no panic
	if small := Get(10); len(small) != 10 {
		t.Fatal("small buffers are plain allocations")
	}
}

// A response buffer (4 KiB, what every response is encoded into) is
// pooled; anything smaller is a plain allocation.
func TestResponseSizedBuffersArePooled(t *testing.T) {
	if b := Get(4 << 10); cap(b) != 4<<10 {
		t.Fatalf("Get(4 KiB): cap %d, want the 4 KiB class", cap(b))
	}
	if b := Get(1100); cap(b) != 2<<10 {
		t.Fatalf("Get(1100), a produce frame of one 1 KiB record: cap %d, want the 2 KiB class", cap(b))
	}
	if b := Get(Min + 1); cap(b) != 2*Min {
		t.Fatalf("Get(Min+1): cap %d, want %d", cap(b), 2*Min)
	}
	if b := Get(Min - 1); cap(b) != Min-1 {
		t.Fatalf("Get(Min-1): cap %d, want an exact allocation", cap(b))
	}
}
