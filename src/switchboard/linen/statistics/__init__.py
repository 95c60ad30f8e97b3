"""Statistics: volumes and costs per month, property, laundry or group, computed in SQL."""
