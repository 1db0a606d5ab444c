package quota

import "testing"

// ApplyChanges must end where SetOverrides of the same set ends.
func TestApplyChangesMatchesSetOverrides(t *testing.T) {
	for _, mode := range []SubquotaMode{Independent, Reserved} {
		a, b := New(Options{Mode: mode, ExpireEvery: -1}), New(Options{Mode: mode, ExpireEvery: -1})
		o1 := Overrides{}
		for i := 0; i < 2000; i++ {
			o1[UserPath(strp("u"+itoa(i)))] = map[string]float64{ProducerByteRate: 4096}
		}
		a.SetOverrides(o1)
		b.SetOverrides(o1)
		o2 := Overrides{}
		for k, v := range o1 {
			o2[k] = v
		}
		o2[UserClientPath(strp("u7"), strp("c1"))] = map[string]float64{ProducerByteRate: 10}
		delete(o2, UserPath(strp("u8")))
		o2[UserPath(nil)] = map[string]float64{ConsumerByteRate: 99}
		a.ApplyChanges(o2, []string{UserClientPath(strp("u7"), strp("c1")), UserPath(strp("u8")), UserPath(nil)})
		b.SetOverrides(o2)
		for _, q := range []struct{ user, client, key string }{
			{"u7", "c1", ProducerByteRate}, {"u7", "c2", ProducerByteRate}, {"u8", "x", ProducerByteRate},
			{"u8", "x", ConsumerByteRate}, {"u1", "", ProducerByteRate},
		} {
			la, _, oka := a.Resolve(q.user, q.client, q.key)
			lb, _, okb := b.Resolve(q.user, q.client, q.key)
			if la != lb || oka != okb {
				t.Errorf("mode %d %v: ApplyChanges %v/%v, SetOverrides %v/%v", mode, q, la, oka, lb, okb)
			}
		}
	}
}

func strp(s string) *string { return &s }

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}
