#pragma once

namespace kbench::timing {

// What a measurement loop needs from a device: cache eviction, device-wide synchronisation and
// a clock on the stream that launches the work. GPU: events on the current stream and an L2
// flush; CPU: the host clock and a cache-thrashing buffer.
class TimingDevice {
  public:
    virtual ~TimingDevice() = default;
    virtual void flush_cache() = 0;  // asynchronous on a GPU
    virtual void synchronize() = 0;  // waits for every stream of the device
    virtual void start() = 0;        // marks the start on the launch stream
    virtual void stop() = 0;         // marks the end on the launch stream
    // Microseconds between the marks; valid after synchronize().
    virtual double stream_elapsed_us() = 0;
    // True when stream_elapsed_us() is a device clock distinct from the host clock.
    virtual bool has_stream_clock() const = 0;
};

}  // namespace kbench::timing
