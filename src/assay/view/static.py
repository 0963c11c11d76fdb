"""The viewer's inline CSS and scripts (no files, no network, no build step)."""

from __future__ import annotations

from assay.report.html_parts import CSS as REPORT_CSS

CSS = (
    REPORT_CSS
    + """
nav{display:flex;gap:16px;align-items:baseline;margin-bottom:12px}nav a{color:var(--bar)}
a{color:var(--bar)}
.filters{display:flex;flex-wrap:wrap;gap:10px;margin:8px 0;align-items:center}
.filters input[type=search]{min-width:260px}
.filters select,.filters input{font:inherit;padding:3px 6px;background:var(--bg);color:var(--fg);
border:1px solid var(--line);border-radius:4px}
tr.row{cursor:pointer}tr.row:hover{background:var(--panel)}
tr.detail td{background:var(--panel);text-align:left;white-space:normal}
.detail pre{white-space:pre-wrap;word-break:break-word;margin:2px 0 8px;font-size:12px}
.detail h4{margin:6px 0 2px;font-size:12px;color:var(--muted)}
.status-failed{color:var(--bad);font-weight:600}.status-errored{color:var(--warn);font-weight:600}
.status-passed{color:var(--ok)}
tr.flip-down td{background:rgba(192,57,43,.10)}tr.flip-up td{background:rgba(31,138,76,.10)}
td.flip-down{color:var(--bad);font-weight:700}td.flip-up{color:var(--ok);font-weight:700}
.count{color:var(--muted);font-size:12px}
svg.trend circle.pass{fill:var(--ok)}svg.trend circle.fail{fill:var(--bad)}
svg.trend circle.none{fill:var(--muted)}svg.trend polyline{fill:none;stroke:var(--bar)}
svg.trend line.ci{stroke:var(--bar);opacity:.45}
.scroll{max-width:100%}
#samples th,#samples td{padding:5px 6px;font-size:13px}
#samples th:first-child,#samples td:first-child{position:sticky;left:0;background:var(--bg);
z-index:1}
#samples thead th{white-space:normal;word-break:break-word;min-width:4.5em;vertical-align:bottom}
table.failing td{text-align:left;white-space:normal}
table.deltas .chip{white-space:normal}
table.deltas td:first-child{white-space:normal;min-width:9em}
table.failing td.reason{min-width:18em}
"""
)

RUN_SCRIPT = """
(function(){
const table=document.getElementById('samples');if(!table)return;
const rows=[...table.querySelectorAll('tbody tr.row')];
const $=id=>document.getElementById(id);
function keep(r,st,m,t,q){
  const outcomes=JSON.parse(r.dataset.outcomes), tags=JSON.parse(r.dataset.tags);
  const status=m?outcomes[m]:r.dataset.status;
  if(m&&status===undefined)return false;
  if(st!=='all'&&status!==st)return false;
  if(t&&!tags.includes(t))return false;
  return !q||r.dataset.text.includes(q);
}
function apply(){
  const st=$('f-status').value,m=$('f-metric').value,t=$('f-tag').value;
  const q=$('f-text').value.trim().toLowerCase();let n=0;
  for(const r of rows){const ok=keep(r,st,m,t,q);r.hidden=!ok;if(ok)n++;
    const d=r.nextElementSibling;if(d&&d.classList.contains('detail'))d.hidden=!ok;}
  $('f-count').textContent=n+' of '+rows.length+' rows';
}
function block(parent,title,value){
  if(value===null||value===undefined)return;
  const h=document.createElement('h4');h.textContent=title;parent.appendChild(h);
  const p=document.createElement('pre');
  p.textContent=typeof value==='string'?value:JSON.stringify(value,null,2);parent.appendChild(p);
}
function reasons(scores){
  const out={};for(const [k,v] of Object.entries(scores)){
    const d=v.details||{};if(d.judge_reason)out[k]=d.judge_reason;}
  return Object.keys(out).length?out:null;
}
function fill(cell,data){
  if(data.note)block(cell,'note',data.note);
  block(cell,'input',data.input);block(cell,'expected',data.expected);
  for(const rep of data.repetitions){
    const a=rep.answer||{};
    const tag=data.repetitions.length>1?' (repetition '+rep.repetition+')':'';
    block(cell,'actual'+tag,a.output===undefined?'(no stored answer)':a.output);
    block(cell,'retrieved contexts'+tag,a.retrieved);block(cell,'trajectory'+tag,a.trajectory);
    block(cell,'scores'+tag,rep.scores);block(cell,'judge reasoning'+tag,reasons(rep.scores));
    if(Object.keys(rep.errors).length)block(cell,'errors'+tag,rep.errors);
  }
}
async function toggle(r){
  const next=r.nextElementSibling;
  if(next&&next.classList.contains('detail')){next.remove();return;}
  const tr=document.createElement('tr');tr.className='detail';
  const td=document.createElement('td');td.colSpan=r.children.length;tr.appendChild(td);
  r.after(tr);td.textContent='loading...';
  const url='/api/sample?run='+encodeURIComponent(table.dataset.run)
    +'&id='+encodeURIComponent(r.dataset.id);
  try{const res=await fetch(url);const data=await res.json();td.textContent='';
    if(!res.ok){block(td,'error',data.error);return;}fill(td,data);}
  catch(e){td.textContent='could not load the sample: '+e;}
}
for(const r of rows)r.addEventListener('click',()=>toggle(r));
for(const id of ['f-status','f-metric','f-tag','f-text'])$(id).addEventListener('input',apply);
apply();
})();
"""

COMPARE_SCRIPT = """
(function(){
const box=document.getElementById('f-changed');if(!box)return;
const rows=[...document.querySelectorAll('#pairs tbody tr')];
function apply(){let n=0;for(const r of rows){const ok=!box.checked||r.dataset.changed==='1';
  r.hidden=!ok;if(ok)n++;}
  document.getElementById('f-count').textContent=n+' of '+rows.length+' samples';}
box.addEventListener('input',apply);apply();
})();
"""
