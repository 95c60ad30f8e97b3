"""WebRTC pieces shared by the media bridge and the simulated bridge; they import nothing of
switchboard."""
