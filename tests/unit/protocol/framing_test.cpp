#include "protocol/framing.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include "process/process.hpp"

namespace kbench::sandbox {

TEST(Framing, RoundTripOverASocket) {
    auto [a, b] = make_socket_pair();
    json sent = {{"op", "run"}, {"values", {1, 2, 3}}, {"text", "héllo"}};
    send_message(a, sent);
    auto got = recv_message(b);
    ASSERT_TRUE(got);
    EXPECT_EQ(got->body, sent);
    ::close(a);
    EXPECT_FALSE(recv_message(b)) << "a clean end of stream is no message";
    ::close(b);
}

TEST(Framing, DescriptorsTravelWithAMessage) {
    auto [a, b] = make_socket_pair();
    auto [r, w] = make_pipe();
    send_message(a, {{"op", "fork"}}, {w});
    auto got = recv_message(b);
    ASSERT_TRUE(got);
    ASSERT_EQ(got->fds.size(), 1u);
    ASSERT_EQ(::write(got->fds[0], "x", 1), 1);
    char c = 0;
    ASSERT_EQ(::read(r, &c, 1), 1);
    EXPECT_EQ(c, 'x');
    for (int fd : {a, b, r, w, got->fds[0]}) ::close(fd);
}

TEST(FrameReader, AssemblesFramesFedByteByByte) {
    std::string frames = encode_frame({{"n", 1}}) + encode_frame({{"n", 2}});
    FrameReader reader;
    std::vector<int> seen;
    for (char c : frames) {
        reader.feed(&c, 1);
        while (auto body = reader.next()) seen.push_back((*body)["n"]);
    }
    EXPECT_EQ(seen, (std::vector<int>{1, 2}));
    EXPECT_FALSE(reader.has_partial());
}

TEST(FrameReader, RejectsGarbageAndOversizedFrames) {
    FrameReader garbage;
    std::string bad = std::string("\x03\x00\x00\x00", 4) + "{{{";
    garbage.feed(bad.data(), bad.size());
    EXPECT_THROW(garbage.next(), ProtocolError);

    FrameReader huge;
    std::string header("\xff\xff\xff\x7f", 4);
    huge.feed(header.data(), header.size());
    EXPECT_THROW(huge.next(), ProtocolError);
}

}  // namespace kbench::sandbox
