// vkir's tvm::runtime::DeviceAPI for kDLVulkan: TVM's runtime (tensors, copies, the Relax VM)
// calls these methods; each forwards to a Python function vkir registers under
// "vkir.tvm.device_api.<name>" (vkir/tvm/device_memory.py), where allocations are vkir device
// arrays behind opaque handles. Built on first use against the installed wheel's own headers.
#include <tvm/ffi/function.h>
#include <tvm/runtime/device_api.h>

#include <cstdint>
#include <string>

namespace {

using tvm::ffi::Any;
using tvm::ffi::Function;
using tvm::runtime::DeviceAPI;
using tvm::runtime::DeviceAttrKind;

Function Callback(const char* name) {
  std::string full = std::string("vkir.tvm.device_api.") + name;
  std::optional<Function> f = Function::GetGlobal(full);
  if (!f.has_value()) {
    TVM_FFI_THROW(RuntimeError) << "vkir's Vulkan device API lost its Python side (" << full
                                << "): call vkir.tvm.install() again";
  }
  return *f;
}

int64_t Handle(const void* ptr) { return static_cast<int64_t>(reinterpret_cast<intptr_t>(ptr)); }

class VkirDeviceAPI final : public DeviceAPI {
 public:
  void SetDevice(DLDevice dev) final { Callback("set_device")(dev.device_id); }

  void GetAttr(DLDevice dev, DeviceAttrKind kind, Any* rv) final {
    Any got = Callback("get_attr")(dev.device_id, static_cast<int>(kind));
    if (got != nullptr) *rv = got;
  }

  void* AllocDataSpace(DLDevice dev, size_t nbytes, size_t alignment,
                       DLDataType type_hint) final {
    int64_t h = Callback("alloc")(dev.device_id, static_cast<int64_t>(nbytes)).cast<int64_t>();
    return reinterpret_cast<void*>(static_cast<intptr_t>(h));
  }

  void FreeDataSpace(DLDevice dev, void* ptr) final { Callback("free")(Handle(ptr)); }

  void StreamSync(DLDevice dev, TVMStreamHandle stream) final {
    Callback("sync")(dev.device_id);
  }

  void* AllocWorkspace(DLDevice dev, size_t nbytes, DLDataType type_hint) final {
    return AllocDataSpace(dev, nbytes, 0, type_hint);
  }

  void FreeWorkspace(DLDevice dev, void* ptr) final { FreeDataSpace(dev, ptr); }

 protected:
  void CopyDataFromTo(const void* from, size_t from_offset, void* to, size_t to_offset,
                      size_t nbytes, DLDevice dev_from, DLDevice dev_to, DLDataType type_hint,
                      TVMStreamHandle stream) final {
    Callback("copy")(Handle(from), static_cast<int64_t>(from_offset),
                     static_cast<int>(dev_from.device_type), Handle(to),
                     static_cast<int64_t>(to_offset), static_cast<int>(dev_to.device_type),
                     static_cast<int64_t>(nbytes));
  }
};

}  // namespace

// Registers "device_api.vulkan" (the global TVM's DeviceAPIManager looks up for kDLVulkan).
extern "C" int vkir_tvm_register_device_api() {
  static VkirDeviceAPI* api = new VkirDeviceAPI();   // lives as long as the process
  Function::SetGlobal("device_api.vulkan",
                      Function::FromTyped([]() -> void* { return api; }), true);
  return 0;
}
