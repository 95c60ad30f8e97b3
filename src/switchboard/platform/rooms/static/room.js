// The room page's client, and the reference client of the signaling protocol (docs/rooms.md).
// Mesh: the peer that joins offers to every peer already there; the others answer. Candidates
// trickle over the socket. On `mode` the page migrates make-before-break (see migrate()).
"use strict";
(() => {
  const tiles = document.getElementById("tiles");
  const room = tiles.dataset.room;
  const modeLabel = document.getElementById("mode");
  const status = document.getElementById("status");
  const mesh = new Map(); // peerId -> RTCPeerConnection
  const names = new Map(); // peerId -> name
  let socket, local, me, iceServers = [], mode = "mesh";
  // heardBy: the peers that receive this page's media through the SFU (`subscriber-connected`)
  const sfu = { publisher: null, subscribers: new Map(), heardBy: new Set() };

  const send = (message) => socket.send(JSON.stringify(message));
  const pref = document.getElementById("pref");

  function tile(peerId, label) {
    let figure = document.getElementById(`tile-${peerId}`);
    if (!figure) {
      figure = document.createElement("figure");
      figure.id = `tile-${peerId}`;
      const video = document.createElement("video");
      video.autoplay = true;
      video.playsInline = true;
      video.muted = peerId === "local";
      const caption = document.createElement("figcaption");
      caption.textContent = label;
      figure.append(video, caption);
      tiles.append(figure);
    }
    return figure.querySelector("video");
  }

  function connection(peerId) {
    const pc = new RTCPeerConnection({ iceServers });
    local.getTracks().forEach((track) => pc.addTrack(track, local));
    pc.onicecandidate = (e) => send({ type: "candidate", to: peerId, candidate: e.candidate });
    pc.ontrack = (e) => { tile(peerId, names.get(peerId) || peerId).srcObject = e.streams[0]; };
    mesh.set(peerId, pc);
    return pc;
  }

  async function offerTo(peerId) {
    const pc = connection(peerId);
    await pc.setLocalDescription(await pc.createOffer());
    send({ type: "offer", to: peerId, sdp: pc.localDescription.sdp });
  }

  function drop(peerId) {
    mesh.get(peerId)?.close();
    mesh.delete(peerId);
    sfu.subscribers.get(peerId)?.close();
    sfu.subscribers.delete(peerId);
    document.getElementById(`tile-${peerId}`)?.remove();
  }

  // Make-before-break: the new connections are made first; the old ones close once connected.
  // To the SFU: publish, then subscribe to each `publisher-added` (a publisher's feed can be
  // subscribed to once it is connected); `subscribeAll` when joining a room already on the SFU.
  async function migrate(target, subscribeAll = false) {
    mode = target;
    modeLabel.textContent = target;
    if (target === "sfu") {
      await publish();
      if (subscribeAll) names.forEach((_name, peerId) => subscribe(peerId));
    } else {
      names.forEach((_name, peerId) => { if (peerId > me) offerTo(peerId); });
      const closeSfu = () => {
        sfu.publisher?.close();
        sfu.subscribers.forEach((pc) => pc.close());
        sfu.publisher = null;
        sfu.subscribers.clear();
        sfu.heardBy.clear();
      };
      setTimeout(closeSfu, 5000);
    }
  }

  // An SFU connection that is not up in time, or that fails later, is made again with the
  // request that made it (a new publisher offer, a new subscription), which replaces the old
  // one on the SFU: a lost check on a starved host or a network change costs a retry, not the
  // room. The wait starts at 15 s and doubles per failed attempt of the same target (the
  // publisher, or the subscription to one peer) up to 2 min, so an overloaded host is not
  // handed more work; it starts over once the target connects.
  const retries = new Map(); // target -> failed attempts
  function retried(pc, target, redo) {
    const attempts = retries.get(target) || 0;
    let timer;
    const again = () => {
      clearTimeout(timer);
      if (pc.connectionState === "closed" || mode !== "sfu") return;
      retries.set(target, attempts + 1);
      redo();
    };
    timer = setTimeout(again, Math.min(15000 * 2 ** attempts, 120000));
    pc.addEventListener("connectionstatechange", () => {
      if (pc.connectionState === "connected") { clearTimeout(timer); retries.delete(target); }
      else if (pc.connectionState === "failed") again();
    });
  }

  async function publish() {
    sfu.publisher?.close();
    sfu.heardBy.clear();  // who receives this page is told again for the new feed
    const pc = new RTCPeerConnection({ iceServers });
    local.getTracks().forEach((track) => pc.addTrack(track, local));
    sfu.publisher = pc;
    retried(pc, "", () => { if (sfu.publisher === pc) publish(); });
    await pc.setLocalDescription(await pc.createOffer());
    await gathered(pc);
    send({ type: "sfu-offer", sdp: pc.localDescription.sdp });
  }

  const gathered = (pc) => new Promise((done) => {
    if (pc.iceGatheringState === "complete") return done();
    pc.addEventListener("icegatheringstatechange", () => {
      if (pc.iceGatheringState === "complete") done();
    });
  });

  // `again`: replace a subscription already made (its publisher published anew, or it failed)
  function subscribe(publisherPeerId, again = false) {
    if (again || !sfu.subscribers.has(publisherPeerId)) send({ type: "sfu-subscribe-offer", publisherPeerId });
  }

  // The mesh edge to a peer closes once both directions go through the SFU: this page's
  // subscription to it is connected, and it said (`subscriber-connected`) it receives this page.
  function breakMesh(peerId) {
    if (sfu.subscribers.get(peerId)?.connectionState !== "connected") return;
    if (!sfu.heardBy.has(peerId)) return;
    mesh.get(peerId)?.close();
    mesh.delete(peerId);
  }

  async function subscribed(publisherPeerId, sdp) {
    sfu.subscribers.get(publisherPeerId)?.close();
    const pc = new RTCPeerConnection({ iceServers });
    sfu.subscribers.set(publisherPeerId, pc);
    retried(pc, publisherPeerId, () => {
      if (sfu.subscribers.get(publisherPeerId) !== pc) return;
      pc.close();
      sfu.subscribers.delete(publisherPeerId);
      subscribe(publisherPeerId);
    });
    pc.ontrack = (e) => { tile(publisherPeerId, names.get(publisherPeerId) || "").srcObject = e.streams[0]; };
    pc.onconnectionstatechange = () => { if (pc.connectionState === "connected") breakMesh(publisherPeerId); };
    await pc.setRemoteDescription({ type: "offer", sdp });
    await pc.setLocalDescription(await pc.createAnswer());
    await gathered(pc);
    send({ type: "sfu-subscribe-answer", publisherPeerId, sdp: pc.localDescription.sdp });
  }

  // Connection reports, the bandwidth detector's input (docs/rooms.md, "Bandwidth"): every
  // `data-stats-seconds` the page sends how its sending connections fared over the period (the
  // mesh edges, or the SFU publisher): the lowest outgoing bitrate the browser's congestion
  // control estimates for any of them (the selected candidate pair's availableOutgoingBitrate,
  // else the rate it sent at), the worst loss a far end reported with that connection's packets
  // sent, and the highest round-trip time. A connection counts from its second sample on, one
  // period after it was first seen connected, past the start of its ramp-up; receive-only
  // connections (SFU subscriptions) send no media and are left out.
  const statsEvery = Number(tiles.dataset.statsSeconds) * 1000;
  const previous = new WeakMap(); // RTCPeerConnection -> its last sample
  let statsTimer;

  async function sample(pc) {
    const stats = await pc.getStats();
    const now = { at: performance.now(), bytes: 0, packets: 0, lost: 0, rttMs: 0, available: null };
    let pair;
    stats.forEach((s) => {
      if (s.type === "outbound-rtp") { now.bytes += s.bytesSent || 0; now.packets += s.packetsSent || 0; }
      else if (s.type === "remote-inbound-rtp") {
        now.lost += Math.max(s.packetsLost || 0, 0);
        now.rttMs = Math.max(now.rttMs, (s.roundTripTime || 0) * 1000);
      } else if (s.type === "transport" && s.selectedCandidatePairId) pair = stats.get(s.selectedCandidatePairId);
    });
    if (pair) {
      now.rttMs = Math.max(now.rttMs, (pair.currentRoundTripTime || 0) * 1000);
      if (pair.availableOutgoingBitrate !== undefined) now.available = pair.availableOutgoingBitrate;
    }
    const before = previous.get(pc);
    previous.set(pc, now);
    if (!before || now.packets === 0) return null;
    const packets = now.packets - before.packets;
    const seconds = (now.at - before.at) / 1000;
    const bitsPerSecond = now.available ?? (8 * (now.bytes - before.bytes)) / seconds;
    const lossPct = packets > 0 ? Math.min(100, (100 * Math.max(now.lost - before.lost, 0)) / packets) : 0;
    return { abrMbps: bitsPerSecond / 1e6, lossPct, packetsSent: Math.max(packets, 0), rttMs: now.rttMs };
  }

  async function report() {
    const sending = [...mesh.values(), ...(sfu.publisher ? [sfu.publisher] : [])]
      .filter((pc) => pc.connectionState === "connected");
    const samples = (await Promise.all(sending.map(sample))).filter((s) => s !== null);
    if (!samples.length || socket.readyState !== WebSocket.OPEN) return;
    const worst = samples.reduce((a, b) => (b.lossPct > a.lossPct ? b : a));
    send({
      type: "stats",
      abrMbps: Math.round(Math.min(...samples.map((s) => s.abrMbps)) * 1000) / 1000,
      lossPct: Math.round(worst.lossPct * 100) / 100,
      packetsSent: worst.packetsSent,
      rttMs: Math.round(Math.max(...samples.map((s) => s.rttMs))),
    });
  }

  const handlers = {
    async welcome(m) {
      me = m.peerId;
      iceServers = m.iceServers;
      modeLabel.textContent = mode = m.mode;
      clearInterval(statsTimer);
      statsTimer = setInterval(() => report().catch(() => {}), statsEvery);
      m.peers.forEach((p) => names.set(p.peerId, p.name));
      if (m.mode === "sfu") await migrate("sfu", true);
      else for (const p of m.peers) await offerTo(p.peerId);
      status.textContent = "joined";
    },
    waiting() { status.textContent = "waiting to be admitted"; },
    "peer-joined"(m) { names.set(m.peer.peerId, m.peer.name); },
    "peer-left"(m) { names.delete(m.peerId); drop(m.peerId); },
    async offer(m) {
      const pc = mesh.get(m.from) || connection(m.from);
      await pc.setRemoteDescription({ type: "offer", sdp: m.sdp });
      await pc.setLocalDescription(await pc.createAnswer());
      send({ type: "answer", to: m.from, sdp: pc.localDescription.sdp });
    },
    async answer(m) { await mesh.get(m.from)?.setRemoteDescription({ type: "answer", sdp: m.sdp }); },
    async candidate(m) { if (m.candidate) await mesh.get(m.from)?.addIceCandidate(m.candidate); },
    async mode(m) { await migrate(m.mode); },
    async "sfu-answer"(m) { await sfu.publisher?.setRemoteDescription({ type: "answer", sdp: m.sdp }); },
    async "sfu-subscribe-offer"(m) { await subscribed(m.publisherPeerId, m.sdp); },
    "publisher-added"(m) { if (mode === "sfu") subscribe(m.peerId, true); },  // a new feed
    "subscriber-connected"(m) { sfu.heardBy.add(m.peerId); breakMesh(m.peerId); },
    error(m) {
      // A feed not connected to the SFU yet (joining a room already there subscribes to every
      // peer): its `publisher-added` follows, and subscribing then succeeds. Not a failure.
      if (m.code === "unknown_peer" && m.publisherPeerId && mode === "sfu") return;
      // An SFU request that crossed the room's move back to mesh: the mesh carries the media.
      if (m.code === "mesh_mode" && mode !== "sfu") return;
      status.textContent = `${m.code}: ${m.message}`;
    },
  };

  document.getElementById("join").addEventListener("submit", async (event) => {
    event.preventDefault();
    const name = document.getElementById("name").value;
    local = await navigator.mediaDevices.getUserMedia({ audio: true, video: true });
    tile("local", `${name} (you)`).srcObject = local;
    event.target.hidden = true;
    document.getElementById("controls").hidden = false;
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    socket = new WebSocket(`${scheme}://${location.host}/signal.ashx?room=${encodeURIComponent(room)}`);
    // /rooms/<name>?call=<number>: the tenant's virtual number answers in the room (its AI peer)
    const call = new URLSearchParams(location.search).get("call");
    const vote = pref.value === "auto" ? {} : { pref: pref.value };
    socket.onopen = () => send({ type: "join", name, role: "human", ...vote, ...(call ? { call } : {}) });
    let queue = Promise.resolve();  // one message at a time, in order
    socket.onmessage = (e) => {
      const m = JSON.parse(e.data);
      queue = queue.then(() => handlers[m.type]?.(m)).catch((err) => { status.textContent = String(err); });
    };
    socket.onclose = (e) => { reset(`disconnected${e.reason ? `: ${e.reason}` : ""}`); };
  });

  // Back to the join form: connections closed, camera and microphone released, tiles gone.
  function reset(text) {
    clearInterval(statsTimer);
    [...mesh.keys()].forEach(drop);
    sfu.publisher?.close();
    sfu.publisher = null;
    sfu.subscribers.forEach((pc) => pc.close());
    sfu.subscribers.clear();
    sfu.heardBy.clear();
    local?.getTracks().forEach((track) => track.stop());
    tiles.replaceChildren();
    document.getElementById("mute").textContent = "Mute";
    document.getElementById("controls").hidden = true;
    document.getElementById("join").hidden = false;
    modeLabel.textContent = "not joined";
    status.textContent = text;
  }

  document.getElementById("mute").addEventListener("click", (event) => {
    const audio = local.getAudioTracks()[0];
    audio.enabled = !audio.enabled;
    event.target.textContent = audio.enabled ? "Mute" : "Unmute";
  });

  // A vote on when the room moves to the SFU (docs/rooms.md, "Preference votes").
  pref.addEventListener("change", () => { if (socket?.readyState === WebSocket.OPEN) send({ type: "preference", pref: pref.value }); });

  document.getElementById("leave").addEventListener("click", () => {
    send({ type: "leave" });
    socket.onclose = null;  // leaving is no disconnection
    socket.close(1000, "left");
    reset("You left the room.");
  });
})();
