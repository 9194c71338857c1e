package loadgen

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestHistogramAgainstSorting checks every quantile the reports use against
// the exact sample of the same rank in the sorted data.
func TestHistogramAgainstSorting(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	distributions := map[string]func() time.Duration{
		"uniform 0-5ms": func() time.Duration { return time.Duration(rng.Int64N(int64(5 * time.Millisecond))) },
		"log-uniform 10ns-10s": func() time.Duration {
			return time.Duration(math.Exp(math.Log(10) + rng.Float64()*(math.Log(1e10)-math.Log(10))))
		},
		"exponential mean 1ms": func() time.Duration { return time.Duration(rng.ExpFloat64() * 1e6) },
		"small exact values":   func() time.Duration { return time.Duration(rng.IntN(300)) },
		"bimodal":              bimodal(rng),
	}
	quantiles := []float64{0, 0.001, 0.1, 0.5, 0.9, 0.99, 0.999, 0.9999, 1}
	for name, draw := range distributions {
		t.Run(name, func(t *testing.T) {
			for _, n := range []int{1, 2, 10, 1000, 100_000} {
				var h Histogram
				samples := make([]time.Duration, n)
				for i := range samples {
					samples[i] = draw()
					h.Record(samples[i])
				}
				slices.Sort(samples)
				for _, q := range quantiles {
					rank := max(int(math.Ceil(q*float64(n))), 1)
					want := samples[rank-1]
					got := h.Quantile(q)
					if diff := math.Abs(float64(got - want)); diff > 0.004*float64(want) {
						t.Errorf("n=%d q=%v: got %v, sorted reference %v (error %.3f%%)", n, q, got, want, 100*diff/float64(want))
					}
				}
				if h.Count() != uint64(n) || h.Min() != samples[0] || h.Max() != samples[n-1] {
					t.Errorf("n=%d: count %d min %v max %v, want %d %v %v", n, h.Count(), h.Min(), h.Max(), n, samples[0], samples[n-1])
				}
			}
		})
	}
}

func bimodal(rng *rand.Rand) func() time.Duration {
	return func() time.Duration {
		if rng.IntN(100) == 0 {
			return 200*time.Millisecond + time.Duration(rng.Int64N(int64(time.Millisecond)))
		}
		return 300*time.Microsecond + time.Duration(rng.Int64N(int64(50*time.Microsecond)))
	}
}

func TestHistogramBucketsCoverEveryValue(t *testing.T) {
	// Buckets are contiguous and every value falls in the bucket whose
	// range holds it, up to the largest duration.
	prevHi := int64(-1)
	for i := range bucketOf(math.MaxInt64) + 1 {
		lo, hi := bucketRange(i)
		if lo != prevHi+1 || hi < lo {
			t.Fatalf("bucket %d is [%d, %d] after one ending at %d", i, lo, hi, prevHi)
		}
		if bucketOf(lo) != i || bucketOf(hi) != i {
			t.Fatalf("bucket %d is [%d, %d] but its ends map to %d and %d", i, lo, hi, bucketOf(lo), bucketOf(hi))
		}
		if lo >= 1<<subBucketBits && float64(hi-lo+1)/float64(lo) > 1.0/(1<<subBucketBits) {
			t.Fatalf("bucket %d is [%d, %d], wider than 1/%d of its values", i, lo, hi, 1<<subBucketBits)
		}
		prevHi = hi
	}
	if prevHi != math.MaxInt64 {
		t.Fatalf("the last bucket ends at %d", prevHi)
	}
}

func TestHistogramMergeEqualsRecordingTogether(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var a, b, both Histogram
	for i := range 10_000 {
		d := time.Duration(rng.ExpFloat64() * float64(time.Millisecond))
		if i%3 == 0 {
			d *= 1000 // b gets a longer tail, and so more buckets
			b.Record(d)
		} else {
			a.Record(d)
		}
		both.Record(d)
	}
	a.Merge(&b)
	for _, q := range []float64{0, 0.5, 0.9, 0.99, 0.999, 1} {
		if a.Quantile(q) != both.Quantile(q) {
			t.Errorf("q=%v: merged %v, recorded together %v", q, a.Quantile(q), both.Quantile(q))
		}
	}
	if a.Count() != both.Count() || a.Min() != both.Min() || a.Max() != both.Max() || a.Mean() != both.Mean() {
		t.Errorf("merged count/min/max/mean %d %v %v %v, recorded together %d %v %v %v",
			a.Count(), a.Min(), a.Max(), a.Mean(), both.Count(), both.Min(), both.Max(), both.Mean())
	}
	var empty Histogram
	a.Merge(&empty)
	empty.Merge(&both)
	if a.Count() != both.Count() || empty.Quantile(0.99) != both.Quantile(0.99) || empty.Min() != both.Min() {
		t.Errorf("merging with an empty histogram changed the result")
	}
}

func TestHistogramEmptyAndReset(t *testing.T) {
	var h Histogram
	if h.Quantile(0.99) != 0 || h.Max() != 0 || h.Mean() != 0 || h.Count() != 0 {
		t.Fatal("an empty histogram reports samples")
	}
	h.Record(-time.Second)
	h.Record(time.Second)
	if h.Min() != 0 || h.Max() != time.Second {
		t.Fatalf("min %v max %v, want 0 and 1s", h.Min(), h.Max())
	}
	h.Reset()
	h.Record(5 * time.Millisecond)
	if h.Count() != 1 || h.Min() != 5*time.Millisecond || h.Quantile(0.5) != 5*time.Millisecond {
		t.Fatalf("after Reset: count %d min %v p50 %v", h.Count(), h.Min(), h.Quantile(0.5))
	}
}

func BenchmarkHistogramRecord(b *testing.B) {
	var h Histogram
	d := 1234567 * time.Nanosecond
	for b.Loop() {
		h.Record(d)
		d += 7919
	}
}
