// The model of PyTorch's CUDA caching allocator (core/src/estimate/caching_allocator.hpp), each
// expectation worked out by hand from the rules of c10/cuda/CUDACachingAllocator.cpp (pytorch/
// pytorch @ 001074d25084fdb87a799823e395a50f5ec044d3) in the comment beside it.
#include <vector>

#include "estimate/caching_allocator.hpp"
#include "support.hpp"

using namespace trainmem::detail;
using Event = AllocatorEvent;

namespace {

constexpr uint64_t KiB = 1024, MiB = 1024 * KiB;

AllocatorPeaks run(std::initializer_list<Event> events, AllocatorOptions options = {}) {
  const std::vector<Event> list(events);
  return simulate_caching_allocator(list, options);
}

}  // namespace

TEST_CASE("caching allocator: round_size and get_allocation_size", "[caching_allocator]") {
  using namespace caching_allocator;
  CHECK(round_size(1) == 512);           // under kMinBlockSize: 512
  CHECK(round_size(512) == 512);
  CHECK(round_size(513) == 1024);        // up to a multiple of 512
  CHECK(round_size(1000000) == 1000448);  // 1,000,000 / 512 = 1953.1 -> 1954 · 512
  CHECK(allocation_size(512) == 2 * MiB);             // small: a 2 MiB segment
  CHECK(allocation_size(1 * MiB) == 2 * MiB);         // kSmallSize itself is small
  CHECK(allocation_size(1 * MiB + 512) == 20 * MiB);  // 1 MiB < size < 10 MiB: 20 MiB
  CHECK(allocation_size(10 * MiB - 512) == 20 * MiB);
  CHECK(allocation_size(10 * MiB) == 10 * MiB);       // from kMinLargeAlloc: rounded to 2 MiB
  CHECK(allocation_size(15 * MiB) == 16 * MiB);
}

TEST_CASE("caching allocator: small requests share a 2 MiB segment", "[caching_allocator]") {
  // 600 KiB = 614,400 B (a multiple of 512), small. The first takes a new 2 MiB segment and is
  // split (2,097,152 − 614,400 = 1,482,752 ≥ 512 left cached); the second and third are cut from
  // what is left (868,352, then 253,952 remain).
  const AllocatorPeaks three = run({Event::allocate(0, 600 * KiB), Event::allocate(1, 600 * KiB),
                                    Event::allocate(2, 600 * KiB)});
  CHECK(three.reserved == 2 * MiB);
  CHECK(three.allocated == 3 * 614400);
  CHECK(three.segments == 1);
  // A fourth does not fit the 253,952 B left: a second 2 MiB segment.
  const AllocatorPeaks four = run({Event::allocate(0, 600 * KiB), Event::allocate(1, 600 * KiB),
                                   Event::allocate(2, 600 * KiB), Event::allocate(3, 600 * KiB)});
  CHECK(four.reserved == 4 * MiB);
  CHECK(four.segments == 2);
}

TEST_CASE("caching allocator: large requests", "[caching_allocator]") {
  // 15 MiB is at least kMinLargeAlloc: a segment of 15 MiB rounded up to 2 MiB, 16 MiB. The 1 MiB
  // left over is not more than kSmallSize, so the block is not split and is allocated whole.
  const AllocatorPeaks fifteen = run({Event::allocate(0, 15 * MiB)});
  CHECK(fifteen.reserved == 16 * MiB);
  CHECK(fifteen.allocated == 16 * MiB);
  // 1.5 MiB is large but under 10 MiB: a 20 MiB segment, split (18.5 MiB > 1 MiB left).
  const AllocatorPeaks mid = run({Event::allocate(0, 3 * MiB / 2)});
  CHECK(mid.reserved == 20 * MiB);
  CHECK(mid.allocated == 3 * MiB / 2);
  // Two of 4 MiB share the 20 MiB segment (16 MiB, then 12 MiB left).
  const AllocatorPeaks two = run({Event::allocate(0, 4 * MiB), Event::allocate(1, 4 * MiB)});
  CHECK(two.reserved == 20 * MiB);
  CHECK(two.segments == 1);
}

TEST_CASE("caching allocator: freed blocks stay reserved and a larger request needs a new segment",
          "[caching_allocator]") {
  // A 100 MiB, B 50 MiB: two segments, 150 MiB. A freed stays cached (reserved unchanged); C of
  // 120 MiB does not fit the cached 100 MiB block: a third segment. Reserved 270 MiB, allocated
  // peaks at B + C = 170 MiB.
  const AllocatorPeaks p = run({Event::allocate(0, 100 * MiB), Event::allocate(1, 50 * MiB), Event::free(0),
                                Event::allocate(2, 120 * MiB)});
  CHECK(p.reserved == 270 * MiB);
  CHECK(p.allocated == 170 * MiB);
  CHECK(p.segments == 3);
}

TEST_CASE("caching allocator: a split block's remainder cannot take a larger request", "[caching_allocator]") {
  // A 30 MiB (a 30 MiB segment) is freed; B 10 MiB takes its front (best fit) and the 20 MiB left
  // is cached (20 MiB > 1 MiB: split). C 25 MiB fits nothing cached: a new segment of 25 MiB
  // rounded to 26 MiB, not split (1 MiB left), allocated whole. Reserved 30 + 26 = 56 MiB for a
  // peak of B + C = 10 + 26 = 36 MiB allocated.
  const AllocatorPeaks p = run({Event::allocate(0, 30 * MiB), Event::free(0), Event::allocate(1, 10 * MiB),
                                Event::allocate(2, 25 * MiB)});
  CHECK(p.reserved == 56 * MiB);
  CHECK(p.allocated == 36 * MiB);
}

TEST_CASE("caching allocator: freed neighbours merge", "[caching_allocator]") {
  // A and B of 4 MiB are cut from one 20 MiB segment; freeing both merges A, B and the 12 MiB
  // remainder back into one 20 MiB block, which then holds an 18 MiB request (2 MiB left, split):
  // no new segment.
  const AllocatorPeaks p = run({Event::allocate(0, 4 * MiB), Event::allocate(1, 4 * MiB), Event::free(0),
                                Event::free(1), Event::allocate(2, 18 * MiB)});
  CHECK(p.reserved == 20 * MiB);
  CHECK(p.segments == 1);
  // Freeing only A leaves 4 MiB before B and 12 MiB after it, neither enough: a new 18 MiB
  // segment (18 MiB ≥ 10 MiB, already a multiple of 2 MiB).
  const AllocatorPeaks q = run({Event::allocate(0, 4 * MiB), Event::allocate(1, 4 * MiB), Event::free(0),
                                Event::allocate(2, 18 * MiB)});
  CHECK(q.reserved == 38 * MiB);
}

TEST_CASE("caching allocator: expandable segments grow in pages", "[caching_allocator]") {
  const AllocatorOptions expandable{.expandable_segments = true};
  // 100 MiB maps five 20 MiB pages; freed, the block stays mapped at the segment's end; 120 MiB
  // then maps one more page and merges with it: reserved 120 MiB, the rounded peak (a plain
  // allocator takes 100 + 120 = 220 MiB, test above).
  const AllocatorPeaks grow = run({Event::allocate(0, 100 * MiB), Event::free(0), Event::allocate(1, 120 * MiB)},
                                  expandable);
  CHECK(grow.reserved == 120 * MiB);
  CHECK(grow.segments == 1);
  CHECK(run({Event::allocate(0, 100 * MiB), Event::free(0), Event::allocate(1, 120 * MiB)}).reserved == 220 * MiB);
  // Three of 15 MiB: the first maps one page (5 MiB left), the second maps a page more (10 MiB
  // left), the third another (15 MiB left): 60 MiB mapped for 45 MiB allocated (split to the
  // byte). Without expandable segments each takes an unsplit 16 MiB segment: 48 MiB, allocated 48.
  const AllocatorPeaks three = run({Event::allocate(0, 15 * MiB), Event::allocate(1, 15 * MiB),
                                    Event::allocate(2, 15 * MiB)},
                                   expandable);
  CHECK(three.reserved == 60 * MiB);
  CHECK(three.allocated == 45 * MiB);
  const AllocatorPeaks plain = run({Event::allocate(0, 15 * MiB), Event::allocate(1, 15 * MiB),
                                    Event::allocate(2, 15 * MiB)});
  CHECK(plain.reserved == 48 * MiB);
  CHECK(plain.allocated == 48 * MiB);
  // Small requests have their own segment, growing by 2 MiB pages: 600 KiB, then 2 MiB of small
  // pool; a 1.5 MiB request is large and maps a 20 MiB page of the large pool's segment.
  const AllocatorPeaks pools = run({Event::allocate(0, 600 * KiB), Event::allocate(1, 3 * MiB / 2)}, expandable);
  CHECK(pools.reserved == 22 * MiB);
  CHECK(pools.segments == 2);
}

TEST_CASE("caching allocator: expandable best fit passes over the block at the mapped end",
          "[caching_allocator]") {
  // A 30 MiB maps two pages (40 MiB; 10 MiB left at the end); B 10 MiB takes that end block whole
  // (nothing left to split); C 10 MiB maps a third page (60 MiB; 10 MiB left at the end, T).
  // A freed: cached are T (10 MiB, at the mapped end) and A (30 MiB). D 8 MiB: best fit is T, but
  // get_free_block's expandable_size walk prefers the next larger block, A, which is split (22 MiB
  // left). E 30 MiB then fits neither (22, 10): T grows by a page to 30 MiB. Reserved 80 MiB; with
  // D in T, E would have taken A and reserved stayed at 60 MiB.
  const AllocatorPeaks p = run({Event::allocate(0, 30 * MiB), Event::allocate(1, 10 * MiB), Event::allocate(2, 10 * MiB),
                                Event::free(0), Event::allocate(3, 8 * MiB), Event::allocate(4, 30 * MiB)},
                               AllocatorOptions{.expandable_segments = true});
  CHECK(p.reserved == 80 * MiB);
}

TEST_CASE("caching allocator: max_split_size keeps oversize blocks whole", "[caching_allocator]") {
  // max_split_size 100 MiB: a cached 300 MiB block is not handed to a 50 MiB request (under the
  // limit): a new 50 MiB segment, 350 MiB. Unlimited (the default), the 50 MiB is cut from it.
  const std::initializer_list<Event> events{Event::allocate(0, 300 * MiB), Event::free(0), Event::allocate(1, 50 * MiB)};
  CHECK(run(events, AllocatorOptions{.max_split_size = 100 * MiB}).reserved == 350 * MiB);
  CHECK(run(events).reserved == 300 * MiB);
  // A 200 MiB request (over the limit) takes a cached block only under 200 + 20 MiB: 300 MiB is
  // refused (a new segment, 500 MiB), 210 MiB is taken (reserved stays 210 MiB).
  CHECK(run({Event::allocate(0, 300 * MiB), Event::free(0), Event::allocate(1, 200 * MiB)},
            AllocatorOptions{.max_split_size = 100 * MiB})
            .reserved == 500 * MiB);
  CHECK(run({Event::allocate(0, 210 * MiB), Event::free(0), Event::allocate(1, 200 * MiB)},
            AllocatorOptions{.max_split_size = 100 * MiB})
            .reserved == 210 * MiB);
}

TEST_CASE("caching allocator: a second identical step reuses the first step's blocks", "[caching_allocator]") {
  // Weights 64 MiB stay; each step allocates activations of 30 and 50 MiB, frees them, then a
  // 40 MiB gradient freed at the step's end. Step 1: three segments, 64 + 30 + 50 = 144 MiB. The
  // gradient is cut from the cached 50 MiB block (best fit over 30 and 50; 10 MiB left, split) and
  // merges back with that remainder when freed. Step 2 finds the 30 and 50 MiB blocks cached and
  // creates nothing: reserved and allocated both peak at 144 MiB, three segments.
  int32_t id = 1;
  std::vector<Event> all{Event::allocate(0, 64 * MiB)};
  for (int s = 0; s < 2; ++s) {
    const int32_t a = id++, b = id++, g = id++;
    for (const Event& e : {Event::allocate(a, 30 * MiB), Event::allocate(b, 50 * MiB), Event::free(b), Event::free(a),
                           Event::allocate(g, 40 * MiB), Event::free(g)})
      all.push_back(e);
  }
  const AllocatorPeaks p = simulate_caching_allocator(all);
  CHECK(p.reserved == 144 * MiB);
  CHECK(p.allocated == 144 * MiB);
  CHECK(p.segments == 3);
}

TEST_CASE("caching allocator: a block cached by one stream never serves another", "[caching_allocator]") {
  // BlockComparatorSize orders by stream first and get_free_block takes a block only of the
  // requesting stream. A (100 MiB, stream 0) is freed and cached; B (100 MiB, stream 1) cannot
  // take it: a second 100 MiB segment. C (100 MiB, stream 0) takes A's block: no third.
  const AllocatorPeaks p = run({Event::allocate(0, 100 * MiB, 0), Event::free(0), Event::allocate(1, 100 * MiB, 1),
                                Event::allocate(2, 100 * MiB, 0)});
  CHECK(p.reserved == 200 * MiB);
  CHECK(p.allocated == 200 * MiB);  // B and C at once
  CHECK(p.segments == 2);
  // A split remainder keeps its block's stream: 4 MiB on stream 0 leaves 16 MiB of its 20 MiB
  // segment cached (split: 16 MiB > kSmallSize), which 4 MiB of stream 1 cannot use (a second
  // 20 MiB segment, 40 MiB) and 4 MiB of stream 0 can (20 MiB).
  const AllocatorPeaks split = run({Event::allocate(0, 4 * MiB, 0), Event::allocate(1, 4 * MiB, 1)});
  CHECK(split.reserved == 40 * MiB);
  CHECK(split.segments == 2);
  const AllocatorPeaks same = run({Event::allocate(0, 4 * MiB, 0), Event::allocate(1, 4 * MiB, 0)});
  CHECK(same.reserved == 20 * MiB);
}

TEST_CASE("caching allocator: expandable segments are one per stream", "[caching_allocator]") {
  // Note [Expandable Segments]: one segment per stream. 30 MiB on stream 0 maps two 20 MiB pages
  // (40 MiB); 30 MiB on stream 1 cannot use the 10 MiB left there: its own segment, 40 MiB more.
  AllocatorOptions expandable;
  expandable.expandable_segments = true;
  const AllocatorPeaks p = run({Event::allocate(0, 30 * MiB, 0), Event::allocate(1, 30 * MiB, 1)}, expandable);
  CHECK(p.reserved == 80 * MiB);
  CHECK(p.segments == 2);
}

TEST_CASE("caching allocator: a block freed after use on another stream waits for its events",
          "[caching_allocator]") {
  // A (100 MiB, stream 1) recordStream'ed on stream 0 and freed: out of allocated at once
  // (free decreases allocated_bytes before insert_events), not cached. B (100 MiB, stream 1)
  // cannot take it: a second segment, reserved 200 MiB, though allocated never passes 100 MiB.
  const AllocatorPeaks waiting = run({Event::allocate(0, 100 * MiB, 1), Event::free_after_use(0),
                                      Event::allocate(1, 100 * MiB, 1)});
  CHECK(waiting.reserved == 200 * MiB);
  CHECK(waiting.allocated == 100 * MiB);
  // Once its events complete (process_events -> free_block), B takes its block: 100 MiB.
  const AllocatorPeaks completed = run({Event::allocate(0, 100 * MiB, 1), Event::free_after_use(0),
                                        Event::complete_pending(), Event::allocate(1, 100 * MiB, 1)});
  CHECK(completed.reserved == 100 * MiB);
  CHECK(completed.segments == 1);
}

TEST_CASE("caching allocator: FSDP1's rate limiter holds two gathered layers", "[caching_allocator]") {
  // FSDP1 forward, five layers of 100 MiB unsharded parameters each, all-gathered on stream 1
  // and freed after use on stream 0 (pytorch/pytorch torch/distributed/fsdp/_flat_param.py @
  // fe03cf693c7c774a88c01cd0bc52f80402b8437f, _free_unsharded_flat_param: record_stream on the
  // compute stream, then _free_storage). _unshard of layer i first synchronises on the oldest
  // free event when two are queued (_runtime_utils.py @ 3ade90a6aaa939cd6238e314c321b9f920db1471;
  // _limiter_utils.py @ e6401a21c0a1c8bad6dc3a8a27d90fd3d555320a, _max_num_inflight_all_gathers
  // = 2): the frees of layers up to i − 2 have completed, i − 1's has not (complete_pending(1)). Layer 0: segment 1; layer 1:
  // layer 0 still pending, segment 2; layer 2: layer 0 completed, its block reused; layer 3
  // reuses layer 1's, layer 4 layer 2's. Reserved 200 MiB; allocated never above 100 MiB.
  std::vector<Event> forward;
  for (int32_t layer = 0; layer < 5; ++layer) {
    forward.push_back(Event::complete_pending(1));
    forward.push_back(Event::allocate(layer, 100 * MiB, 1));
    forward.push_back(Event::free_after_use(layer));
  }
  const AllocatorPeaks limited = simulate_caching_allocator(forward);
  CHECK(limited.reserved == 200 * MiB);
  CHECK(limited.allocated == 100 * MiB);
  CHECK(limited.segments == 2);
  // Without record_stream (an immediate free, as FSDP2's event-based freeing leaves it to the
  // caller's stream order) one segment serves every layer.
  std::vector<Event> immediate;
  for (int32_t layer = 0; layer < 5; ++layer) {
    immediate.push_back(Event::allocate(layer, 100 * MiB, 1));
    immediate.push_back(Event::free(layer));
  }
  CHECK(simulate_caching_allocator(immediate).reserved == 100 * MiB);
}

TEST_CASE("caching allocator: a pending block does not merge until it completes", "[caching_allocator]") {
  // A and B, 4 MiB each, split from one 20 MiB segment (A at 0, B at 4 MiB, 12 MiB cached after
  // them). A freed after use elsewhere, B freed: B merges with the 12 MiB after it (16 MiB
  // cached) but not with A, still pending. C of 18 MiB (from kMinLargeAlloc: a request of its
  // own size rounded to 2 MiB) does not fit 16 MiB: a new 18 MiB segment, 38 MiB reserved.
  const AllocatorPeaks pending = run({Event::allocate(0, 4 * MiB), Event::allocate(1, 4 * MiB),
                                      Event::free_after_use(0), Event::free(1), Event::allocate(2, 18 * MiB)});
  CHECK(pending.reserved == 38 * MiB);
  // Once A completes it merges with the 16 MiB after it: the whole 20 MiB block holds C (the
  // 2 MiB left is more than kSmallSize, so it is split off and cached): 20 MiB reserved.
  const AllocatorPeaks merged = run({Event::allocate(0, 4 * MiB), Event::allocate(1, 4 * MiB),
                                     Event::free_after_use(0), Event::free(1), Event::complete_pending(),
                                     Event::allocate(2, 18 * MiB)});
  CHECK(merged.reserved == 20 * MiB);
  CHECK(merged.allocated == 18 * MiB);
}

TEST_CASE("caching allocator: FSDP1's backward prefetch holds three gathered units' blocks", "[caching_allocator][fsdp1]") {
  // FSDP1 backward with BACKWARD_PRE, units 4 … 0 of 100 MiB unsharded flat parameters on
  // stream 1 (pytorch/pytorch torch/distributed/fsdp/_runtime_utils.py @
  // 3ade90a6aaa939cd6238e314c321b9f920db1471: _pre_backward_hook unshards the unit unless
  // prefetched, then _prefetch_handles unshards the next one in backward order; _unshard first
  // synchronises the oldest queued free event when two are queued, complete_pending(1) here;
  // _post_backward_hook reshards the unit, a free after use on the compute stream).
  // Unit 4: a segment (1); prefetch of 3: unit 4 not yet freed, a segment (2); 4 freed, pending.
  // Unit 3's prefetch of 2: one pending, nothing completes, a segment (3); 3 freed (pending 4, 3).
  // Unit 2's prefetch of 1: 4 completes, its block reused; 2 freed. Unit 1's prefetch of 0: 3
  // completes, reused. Reserved 300 MiB in 3 segments, never more than two allocated (200 MiB).
  std::vector<Event> backward;
  int32_t prefetched = -1;
  for (int32_t unit = 4; unit >= 0; --unit) {
    int32_t current = prefetched;
    if (unit == 4) {
      backward.push_back(Event::complete_pending(1));
      backward.push_back(Event::allocate(unit, 100 * MiB, 1));
      current = unit;
    }
    if (unit > 0) {
      backward.push_back(Event::complete_pending(1));
      backward.push_back(Event::allocate(unit - 1, 100 * MiB, 1));
      prefetched = unit - 1;
    }
    backward.push_back(Event::free_after_use(current));
  }
  const AllocatorPeaks peaks = simulate_caching_allocator(backward);
  CHECK(peaks.reserved == 300 * MiB);
  CHECK(peaks.allocated == 200 * MiB);
  CHECK(peaks.segments == 3);
}
