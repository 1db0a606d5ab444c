package record

import (
	"github.com/twmb/franz-go/pkg/kbin"
	"testing"
)

func TestVarintMatchesKbin(t *testing.T) {
	for _, v := range []int64{0, 1, -1, 63, -64, 64, -65, 8191, -8192, 8192, 1 << 20, -(1 << 30), 1<<31 - 1, -(1 << 31), 1 << 40, -(1 << 50)} {
		enc := kbin.AppendVarlong(nil, v)
		for cut := 0; cut <= len(enc); cut++ {
			a, b := kbin.Reader{Src: enc[:cut]}, kbin.Reader{Src: enc[:cut]}
			if got, want := varlong(&a), b.Varlong(); got != want || a.Ok() != b.Ok() || len(a.Src) != len(b.Src) {
				t.Fatalf("varlong %d cut %d: got %d ok %v, kbin %d ok %v", v, cut, got, a.Ok(), want, b.Ok())
			}
		}
		if v != int64(int32(v)) {
			continue
		}
		enc = kbin.AppendVarint(nil, int32(v))
		for cut := 0; cut <= len(enc); cut++ {
			a, b := kbin.Reader{Src: enc[:cut]}, kbin.Reader{Src: enc[:cut]}
			if got, want := varint(&a), b.Varint(); got != want || a.Ok() != b.Ok() || len(a.Src) != len(b.Src) {
				t.Fatalf("varint %d cut %d: got %d ok %v, kbin %d ok %v", v, cut, got, a.Ok(), want, b.Ok())
			}
		}
	}
}
