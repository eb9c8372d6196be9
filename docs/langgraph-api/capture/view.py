import re, sys, json
s = open(sys.argv[1]).read()
want = sys.argv[2] if len(sys.argv) > 2 else None
W = int(sys.argv[3]) if len(sys.argv) > 3 else 600
for sec in s.split('\n## ')[1:]:
    title = sec.split('\n')[0]
    if want and not re.search(want, title):
        continue
    print('####', title)
    m = re.search(r'-> \*\*(\d+)\*\*', sec)
    print('   status', m and m.group(1))
    for line in re.findall(r'^\+\s*([\d.]+) \| (.*)$', sec, re.M):
        t, l = line
        if not l.strip():
            continue
        if l.startswith('data: '):
            l = l.replace('"additional_kwargs":{},"response_metadata":{},', '').replace(',"tool_calls":[],"invalid_tool_calls":[],"usage_metadata":null', '')
        print(f'   {t} {l[:W]}')
