// A model of PyTorch's CUDA caching allocator (internal to the estimate room): a sequence of
// allocations and frees in, the peak reserved and allocated bytes and the segment count out.
// Pure and deterministic: no I/O, no clock, no device.
//
// The rules, from pytorch/pytorch c10/cuda/CUDACachingAllocator.cpp @
// 001074d25084fdb87a799823e395a50f5ec044d3 (named by the function or constant that holds each,
// so that they can be found at any commit; the file has kept these names since PyTorch 2.1):
//  - kMinBlockSize 512, kSmallSize 1 MiB, kSmallBuffer 2 MiB, kLargeBuffer 20 MiB,
//    kMinLargeAlloc 10 MiB, kRoundLarge 2 MiB (the constants at the top of the file).
//  - round_size: a request under 512 B takes 512 B, any other is rounded up to a multiple of
//    512 B (roundup_power2_divisions, off by default in CUDAAllocatorConfig, is not modelled).
//  - get_pool: a rounded size of at most kSmallSize goes to the small pool, larger to the large.
//  - get_allocation_size: a new segment (cudaMalloc) is kSmallBuffer for a small request,
//    kLargeBuffer for a request under kMinLargeAlloc, else the request rounded up to kRoundLarge.
//  - get_free_block: best fit, the smallest cached block of the pool at least as large as the
//    request (BlockComparatorSize orders by size, then address). With max_split_size set, a
//    request under it never takes a block of max_split_size or more, and a request of
//    max_split_size or more takes a block only if it is smaller than the request + kLargeBuffer;
//    only the first candidate is examined. max_split_size is unlimited by default
//    (CUDAAllocatorConfig), which turns both rules off.
//  - malloc: with no fitting cached block, alloc_block cudaMallocs a new segment of
//    get_allocation_size (the retries that release cached blocks run only when cudaMalloc fails:
//    this model has no capacity, so its figures are those of a GPU under no memory pressure).
//  - should_split: a block found for a request is split when the remainder is at least
//    kMinBlockSize in the small pool (or with expandable segments), and in the large pool when the
//    request is under max_split_size and the remainder exceeds kSmallSize. alloc_found_block
//    hands out the front and keeps the remainder cached; an unsplit block is allocated whole and
//    counts whole in allocated_bytes (stats.allocated_bytes += block->size).
//  - free / free_block: a freed block merges with its free neighbours in the same segment
//    (try_merge_blocks: prev and next) and is cached in its pool; segments are returned to CUDA
//    only by emptyCache or the OOM retry (release_cached_blocks), so reserved never falls here.
//  - expandable_segments (Note [Expandable Segments]; find_expandable_block, map_block,
//    try_allocate_expandable_block): one segment per pool and stream whose address space is
//    reserved once; it grows by mapping pages of kSmallBuffer (small pool) or kLargeBuffer (large
//    pool) at its end, merged with the free block before them, instead of a new cudaMalloc. Best
//    fit then prefers, to the free block at the mapped end, the next larger cached block
//    (get_free_block's expandable_size walk).
//  - Streams (Block::stream, "allocation stream"): BlockComparatorSize orders cached blocks by
//    stream first, and get_free_block searches with a key of the requesting stream, taking a block
//    only when it is of that stream (`(*it)->stream != p.stream()` ends the search), so a block
//    cached by one stream never serves another; a split remainder keeps its block's stream, and
//    expandable segments are one per pool and stream (Note [Expandable Segments]: "one segment
//    (per stream)"). Streams are small integers here, 0 the default stream.
//  - recordStream (Block::stream_uses): free() of a block used on a stream other than its own
//    does not cache it: insert_events records a CUDA event on each such stream and the block
//    waits, counted out of allocated_bytes at once (free decreases stats.allocated_bytes before
//    the stream_uses test) but still reserved and unusable, until process_events (run at the
//    start of every malloc) finds its events complete and calls free_block. The model has no
//    clock: such a free is pending until the caller says the work before it has completed
//    (complete_pending), as a host synchronisation on a later event of that stream would
//    (FSDP1's rate limiter, event.synchronize() in _runtime_utils._unshard). Until then, err
//    high: the block is not reused.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <set>
#include <span>
#include <vector>

namespace trainmem::detail {

namespace caching_allocator {
inline constexpr uint64_t k_min_block_size = 512;           // kMinBlockSize
inline constexpr uint64_t k_small_size = 1048576;           // kSmallSize, 1 MiB
inline constexpr uint64_t k_small_buffer = 2097152;         // kSmallBuffer, 2 MiB
inline constexpr uint64_t k_large_buffer = 20971520;        // kLargeBuffer, 20 MiB
inline constexpr uint64_t k_min_large_alloc = 10485760;     // kMinLargeAlloc, 10 MiB
inline constexpr uint64_t k_round_large = 2097152;          // kRoundLarge, 2 MiB
inline constexpr uint64_t k_unlimited = ~uint64_t(0);       // max_split_size's default
inline constexpr int k_max_streams = 8;                      // streams 0 .. 7

uint64_t round_size(uint64_t bytes);
uint64_t allocation_size(uint64_t rounded);  // get_allocation_size
}  // namespace caching_allocator

struct AllocatorOptions {
  bool expandable_segments = false;
  uint64_t max_split_size = caching_allocator::k_unlimited;
};

struct AllocatorPeaks {
  uint64_t reserved = 0;   // max_memory_reserved: segments cudaMalloc'ed or pages mapped
  uint64_t allocated = 0;  // max_memory_allocated: the blocks handed out (rounded sizes)
  int64_t segments = 0;    // segments created (expandable: one per pool used)
};

// One event of a sequence: allocate `bytes` under the caller's `id` on `stream`, free the
// allocation made under `id` (at once, or after its recorded use on another stream), or complete
// the pending frees but the newest `keep` (ids are small non-negative integers, each allocated at
// most once at a time).
struct AllocatorEvent {
  enum class Kind : uint8_t { allocate, free, free_after_use, complete_pending } kind;
  uint8_t stream;
  int32_t id;
  uint64_t bytes;  // allocate: the request; complete_pending: how many newest frees stay pending
  static AllocatorEvent allocate(int32_t id, uint64_t bytes, uint8_t stream = 0) {
    return {Kind::allocate, stream, id, bytes};
  }
  static AllocatorEvent free(int32_t id) { return {Kind::free, 0, id, 0}; }
  static AllocatorEvent free_after_use(int32_t id) { return {Kind::free_after_use, 0, id, 0}; }
  static AllocatorEvent complete_pending(uint64_t keep = 0) { return {Kind::complete_pending, 0, -1, keep}; }
};

// Nodes of the pools' ordered sets, from a free list per node type (speed only: a pool takes and
// returns a node at nearly every event, and malloc's cost was a quarter of a simulation's). Nodes
// go back to the free list, never to malloc; the list is as long as the most nodes ever live at
// once on this thread (a few thousand). Stateless: every instance shares its type's list.
template <class T>
struct NodeRecycler {
  using value_type = T;
  NodeRecycler() = default;
  template <class U>
  NodeRecycler(const NodeRecycler<U>&) {}
  T* allocate(std::size_t n) {
    if (n == 1 && !free_list().empty()) {
      T* p = free_list().back();
      free_list().pop_back();
      return p;
    }
    return static_cast<T*>(::operator new(n * sizeof(T)));
  }
  void deallocate(T* p, std::size_t n) {
    if (n == 1) free_list().push_back(p);
    else ::operator delete(p);
  }
  template <class U>
  bool operator==(const NodeRecycler<U>&) const { return true; }
  template <class U>
  bool operator!=(const NodeRecycler<U>&) const { return false; }

 private:
  // Never destroyed: a set destroyed at thread exit after it may still return its nodes here.
  static std::vector<T*>& free_list() {
    static thread_local std::vector<T*>* list = new std::vector<T*>();
    return *list;
  }
};

// The allocator's state, driven one call at a time.
class CachingAllocatorModel {
  static constexpr int k_max_streams_ = caching_allocator::k_max_streams;

 public:
  explicit CachingAllocatorModel(AllocatorOptions options = {}) { reset(options); }
  // Back to an empty allocator, keeping the room its vectors have (speed only).
  void reset(AllocatorOptions options = {});
  void allocate(int32_t id, uint64_t bytes, int stream = 0);  // stream in [0, k_max_streams)
  void free(int32_t id);  // an id not currently allocated is ignored
  // free() of a block recordStream'ed on another stream: out of allocated now, cached only when
  // complete_pending reaches it.
  void free_after_use(int32_t id);
  // The frees pending longest complete, all but the newest `keep`, in the order they were made.
  void complete_pending(size_t keep = 0);
  void reserve(size_t events);  // room for a sequence of this many events (speed only)
  const AllocatorPeaks& peaks() const { return peaks_; }
  uint64_t reserved() const { return reserved_; }
  uint64_t allocated() const { return allocated_; }

 private:
  struct Block {
    uint64_t offset, size;
    int32_t segment, prev, next;
    bool allocated, small;
    uint8_t stream;
  };
  struct Segment {
    bool small;
    uint8_t stream;
    uint64_t mapped;  // expandable segments: bytes mapped so far; a cudaMalloc'ed one: its size
    int32_t last;     // the block at its end
  };
  // A cached block in its pool, ordered as BlockComparatorSize orders them: by stream, by size,
  // then by address (here the segment's creation order, then the offset in it), packed into two
  // words: `order` is stream << 56 | size, `address` segment << 40 | offset (sizes and offsets
  // below 2^40 B; a cached block's segment and offset are its own).
  struct Key {
    uint64_t order, address;
    int32_t block;
    bool operator<(const Key& o) const { return order < o.order || (order == o.order && address < o.address); }
  };
  static uint64_t order_of(uint8_t stream, uint64_t size) { return uint64_t(stream) << 56 | size; }
  Key key(int32_t b) const {
    const Block& k = blocks_[size_t(b)];
    return {order_of(k.stream, k.size), uint64_t(k.segment) << 40 | k.offset, b};
  }
  // std::set, not std::pmr: Emscripten 3.1.6's libc++ has no <memory_resource>.
  using Pool = std::set<Key, std::less<Key>, NodeRecycler<Key>>;
  Pool& pool(bool small) { return small ? small_pool_ : large_pool_; }
  int32_t new_block(Block b);
  int32_t find_free(uint64_t size, bool small, uint8_t stream);
  int32_t new_segment(uint64_t size, bool small, uint8_t stream);
  int32_t grow_expandable(uint64_t size, bool small, uint8_t stream);
  bool should_split(const Block& b, uint64_t size) const;
  void cache(int32_t b);
  int32_t take(int32_t id);       // the caller's id's block, out of allocated; -1 when none
  void free_block(int32_t b);     // merge with cached neighbours, then cache

  AllocatorOptions options_;
  std::vector<Block> blocks_;
  std::vector<int32_t> spare_;     // indices of merged-away blocks, reused
  std::vector<Segment> segments_;
  Pool small_pool_, large_pool_;
  std::vector<int32_t> block_of_;  // caller's id -> block index, -1 when not allocated
  std::vector<int32_t> pending_;   // blocks freed after use elsewhere, oldest first
  size_t pending_done_ = 0;        // how many of pending_'s front have completed
  int32_t expandable_[k_max_streams_][2];  // [stream][small] -> its expandable segment, -1 none
  uint64_t reserved_ = 0, allocated_ = 0;
  AllocatorPeaks peaks_;
};

// Runs a whole sequence from an empty allocator (one model per thread, reset and reused).
AllocatorPeaks simulate_caching_allocator(std::span<const AllocatorEvent> events, AllocatorOptions options = {});

}  // namespace trainmem::detail
