// Force-included into ggml-vulkan.cpp only when the Vulkan headers predate VK_EXT_layer_settings
// (Vulkan-Headers 1.3.239, Debian 12's libvulkan-dev, lacks it; llama.cpp uses it to configure the
// validation layer when one is requested, GGML_VULKAN_VALIDATE). Declares the extension's C types
// as the Vulkan registry defines them, and the vulkan.hpp names that code spells. Nothing else in
// the backend changes; with newer headers this file is not used (CMakeLists.txt checks).
#pragma once

#include <vulkan/vulkan_core.h>

#include <cstdint>
#include <vector>

#ifndef VK_EXT_layer_settings
#define VK_EXT_layer_settings 1
#define VK_EXT_LAYER_SETTINGS_SPEC_VERSION 2
#define VK_EXT_LAYER_SETTINGS_EXTENSION_NAME "VK_EXT_layer_settings"
// extension 497: 1000000000 + (497 - 1) * 1000
#define VK_STRUCTURE_TYPE_LAYER_SETTINGS_CREATE_INFO_EXT ((VkStructureType)1000496000)

typedef enum VkLayerSettingTypeEXT {
  VK_LAYER_SETTING_TYPE_BOOL32_EXT = 0,
  VK_LAYER_SETTING_TYPE_INT32_EXT = 1,
  VK_LAYER_SETTING_TYPE_INT64_EXT = 2,
  VK_LAYER_SETTING_TYPE_UINT32_EXT = 3,
  VK_LAYER_SETTING_TYPE_UINT64_EXT = 4,
  VK_LAYER_SETTING_TYPE_FLOAT32_EXT = 5,
  VK_LAYER_SETTING_TYPE_FLOAT64_EXT = 6,
  VK_LAYER_SETTING_TYPE_STRING_EXT = 7,
  VK_LAYER_SETTING_TYPE_MAX_ENUM_EXT = 0x7FFFFFFF
} VkLayerSettingTypeEXT;

typedef struct VkLayerSettingEXT {
  const char* pLayerName;
  const char* pSettingName;
  VkLayerSettingTypeEXT type;
  uint32_t valueCount;
  const void* pValues;
} VkLayerSettingEXT;

typedef struct VkLayerSettingsCreateInfoEXT {
  VkStructureType sType;
  const void* pNext;
  uint32_t settingCount;
  const VkLayerSettingEXT* pSettings;
} VkLayerSettingsCreateInfoEXT;

namespace vk {
enum class LayerSettingTypeEXT : int32_t {
  eBool32 = VK_LAYER_SETTING_TYPE_BOOL32_EXT,
  eInt32 = VK_LAYER_SETTING_TYPE_INT32_EXT,
  eInt64 = VK_LAYER_SETTING_TYPE_INT64_EXT,
  eUint32 = VK_LAYER_SETTING_TYPE_UINT32_EXT,
  eUint64 = VK_LAYER_SETTING_TYPE_UINT64_EXT,
  eFloat32 = VK_LAYER_SETTING_TYPE_FLOAT32_EXT,
  eFloat64 = VK_LAYER_SETTING_TYPE_FLOAT64_EXT,
  eString = VK_LAYER_SETTING_TYPE_STRING_EXT,
};

// Same layout as VkLayerSettingEXT (an aggregate: `{layer, setting, type, count, values}`).
struct LayerSettingEXT {
  const char* pLayerName;
  const char* pSettingName;
  LayerSettingTypeEXT type;
  uint32_t valueCount;
  const void* pValues;
};
static_assert(sizeof(LayerSettingEXT) == sizeof(VkLayerSettingEXT), "LayerSettingEXT layout");

// Same layout as VkLayerSettingsCreateInfoEXT; passed as a pNext pointer.
struct LayerSettingsCreateInfoEXT {
  VkStructureType sType = VK_STRUCTURE_TYPE_LAYER_SETTINGS_CREATE_INFO_EXT;
  const void* pNext = nullptr;
  uint32_t settingCount = 0;
  const LayerSettingEXT* pSettings = nullptr;
  explicit LayerSettingsCreateInfoEXT(const std::vector<LayerSettingEXT>& settings)
      : settingCount(static_cast<uint32_t>(settings.size())), pSettings(settings.data()) {}
};
static_assert(sizeof(LayerSettingsCreateInfoEXT) == sizeof(VkLayerSettingsCreateInfoEXT), "LayerSettingsCreateInfoEXT layout");
}  // namespace vk
#endif
