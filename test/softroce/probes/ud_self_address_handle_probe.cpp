// Why datagram rsockets fail on Soft-RoCE (and on any RoCE port) with
// rdma-core v44: before its first datagram, an rsocket creates a UD queue
// pair and an address handle to that queue pair itself, with a LID and no
// global route header, which is how InfiniBand addresses a port. A RoCE port
// has no LIDs: the kernel refuses every address handle without a GRH
// (EINVAL), so the rsocket's connect or first send fails. This probe makes
// the same call with plain verbs, then the one a RoCE port accepts (a GRH to
// the port's own GID), and says which of the two the device took.
//
// usage: ud_self_address_handle_probe [IPV4-ADDRESS]   (default $CORIO_RDMA_ADDR)
// exit 0: the v44 address handle is refused and the GRH one accepted (the
// failure is reproduced and explained); 1: it is not; 2: set-up failed.

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <rdma/rdma_cma.h>

namespace {

const char* link_layer_name(std::uint8_t layer)
{
    switch (layer) {
    case IBV_LINK_LAYER_ETHERNET: return "Ethernet (RoCE)";
    case IBV_LINK_LAYER_INFINIBAND: return "InfiniBand";
    default: return "unspecified";
    }
}

// The GID a RoCE port derives from an IPv4 address: ::ffff:a.b.c.d.
bool is_gid_of(const ibv_gid& gid, in_addr address)
{
    static constexpr unsigned char prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    return std::memcmp(gid.raw, prefix, sizeof prefix) == 0 &&
           std::memcmp(gid.raw + 12, &address.s_addr, 4) == 0;
}

} // namespace

int main(int argc, char** argv)
{
    const char* text = argc > 1 ? argv[1] : std::getenv("CORIO_RDMA_ADDR");
    sockaddr_in address{};
    address.sin_family = AF_INET;
    if (text == nullptr || inet_pton(AF_INET, text, &address.sin_addr) != 1) {
        std::fprintf(stderr, "usage: %s IPV4-ADDRESS (or set CORIO_RDMA_ADDR)\n", argv[0]);
        return 2;
    }

    rdma_cm_id* id = nullptr;
    if (rdma_create_id(nullptr, &id, nullptr, RDMA_PS_UDP) != 0 ||
        rdma_bind_addr(id, reinterpret_cast<sockaddr*>(&address)) != 0 || id->verbs == nullptr) {
        std::fprintf(stderr, "no RDMA device bound to %s: %s\n", text, std::strerror(errno));
        return 2;
    }
    ibv_pd* pd = ibv_alloc_pd(id->verbs);
    ibv_port_attr port{};
    if (pd == nullptr || ibv_query_port(id->verbs, id->port_num, &port) != 0) {
        std::fprintf(stderr, "cannot use %s: %s\n", ibv_get_device_name(id->verbs->device),
                     std::strerror(errno));
        return 2;
    }
    std::printf("device %s port %u: link layer %s, LID %u, active MTU %d bytes\n",
                ibv_get_device_name(id->verbs->device), id->port_num,
                link_layer_name(port.link_layer), port.lid, 128 << port.active_mtu);

    // What rsockets v44 (ds_add_qp_dest) asks for: LID and port, no GRH.
    ibv_ah_attr lid_only{};
    lid_only.dlid = port.lid;
    lid_only.port_num = id->port_num;
    errno = 0;
    ibv_ah* lid_ah = ibv_create_ah(pd, &lid_only);
    const int lid_errno = errno;
    std::printf("address handle as rsockets v44 makes it (LID, no GRH): %s\n",
                lid_ah != nullptr ? "created" : std::strerror(lid_errno));

    // What a RoCE port needs: a GRH naming the port's own GID.
    int gid_index = -1;
    for (int i = 0; i < port.gid_tbl_len && gid_index < 0; ++i) {
        ibv_gid gid{};
        if (ibv_query_gid(id->verbs, id->port_num, i, &gid) == 0 && is_gid_of(gid, address.sin_addr))
            gid_index = i;
    }
    ibv_ah* grh_ah = nullptr;
    if (gid_index >= 0) {
        ibv_ah_attr with_grh = lid_only;
        with_grh.is_global = 1;
        ibv_query_gid(id->verbs, id->port_num, gid_index, &with_grh.grh.dgid);
        with_grh.grh.sgid_index = static_cast<std::uint8_t>(gid_index);
        with_grh.grh.hop_limit = 1;
        errno = 0;
        grh_ah = ibv_create_ah(pd, &with_grh);
        std::printf("address handle with a GRH to the port's own GID (index %d): %s\n", gid_index,
                    grh_ah != nullptr ? "created" : std::strerror(errno));
    } else {
        std::printf("no GID of %s on the port: the GRH address handle was not tried\n", text);
    }

    const bool reproduced = lid_ah == nullptr && lid_errno == EINVAL && grh_ah != nullptr;
    std::printf("%s\n", reproduced ? "reproduced: this port refuses the address handle rsockets v44 "
                                     "needs for every datagram socket"
                                   : "not reproduced on this port");
    if (lid_ah != nullptr)
        ibv_destroy_ah(lid_ah);
    if (grh_ah != nullptr)
        ibv_destroy_ah(grh_ah);
    ibv_dealloc_pd(pd);
    rdma_destroy_id(id);
    return reproduced ? 0 : 1;
}
